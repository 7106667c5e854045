// Renders chat requests with @huggingface/jinja (the reference used by transformers.js), building
// the template context exactly as omni::chat::render_chat does, and prints the results as JSON.
//
//   node render.mjs NODE_MODULES_DIR CASES_JSON CONFIG_JSON...
//
// Output: {"<config path>": [{"ok": true, "text": "..."} | {"ok": false, "error": "..."}, ...]}
// with one entry per (case, add_generation_prompt in [true, false]), in case order.
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import path from "node:path";

const [modulesDir, casesPath, ...configPaths] = process.argv.slice(2);
const { Template } = await import(pathToFileURL(path.join(modulesDir, "@huggingface/jinja/dist/index.js")).href);

function tokenText(value) {
  if (typeof value === "string") return value;
  if (value && typeof value === "object" && typeof value.content === "string") return value.content;
  return undefined;
}

function flattenContent(content) {
  if (!Array.isArray(content)) return content;
  return content.map((part) => part.text).join("\n");
}

function buildContext(request, config, addGenerationPrompt) {
  const context = {};
  for (const [key, value] of Object.entries(config)) {
    if (!key.endsWith("_token")) continue;
    const text = tokenText(value);
    if (text !== undefined) context[key] = text;
  }
  context.messages = request.messages.map((m) => ("content" in m ? { ...m, content: flattenContent(m.content) } : { ...m }));
  if (request.tools != null) context.tools = request.tools;
  if (request.documents != null) context.documents = request.documents;
  for (const [key, value] of Object.entries(request.chat_template_kwargs ?? {})) {
    if (key !== "messages" && key !== "tools") context[key] = value;
  }
  context.add_generation_prompt = addGenerationPrompt;
  return context;
}

const cases = JSON.parse(readFileSync(casesPath, "utf8"));
const results = {};
for (const configPath of configPaths) {
  const config = JSON.parse(readFileSync(configPath, "utf8"));
  const template = new Template(config.chat_template);
  const out = [];
  for (const c of cases) {
    for (const addGenerationPrompt of [true, false]) {
      try {
        out.push({ ok: true, text: template.render(buildContext(c.request, config, addGenerationPrompt)) });
      } catch (e) {
        out.push({ ok: false, error: String(e.message ?? e) });
      }
    }
  }
  results[configPath] = out;
}
process.stdout.write(JSON.stringify(results));
