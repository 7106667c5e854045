// The baseline of omni-chat-template-bench: @huggingface/jinja under node, same request, same
// context building as render_chat (tests/chat/reference/render.mjs), same output format.
//   node reference.mjs NODE_MODULES REQUEST_JSON ITERATIONS CONFIG_JSON...
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import path from "node:path";

const [modulesDir, requestPath, iterationsText, ...configPaths] = process.argv.slice(2);
const { Template } = await import(pathToFileURL(path.join(modulesDir, "@huggingface/jinja/dist/index.js")).href);
const request = JSON.parse(readFileSync(requestPath, "utf8"));
const iterations = Number(iterationsText);

function context(config) {
  const ctx = {};
  for (const [key, value] of Object.entries(config)) {
    if (!key.endsWith("_token")) continue;
    if (typeof value === "string") ctx[key] = value;
    else if (value && typeof value.content === "string") ctx[key] = value.content;
  }
  ctx.messages = request.messages.map((m) => ({ ...m }));
  if (request.tools != null) ctx.tools = request.tools;
  ctx.add_generation_prompt = true;
  return ctx;
}

const report = {};
for (const configPath of configPaths) {
  const config = JSON.parse(readFileSync(configPath, "utf8"));
  const parses = 200;
  let start = process.hrtime.bigint();
  let template;
  for (let p = 0; p < parses; ++p) template = new Template(config.chat_template);
  const parseUs = Number(process.hrtime.bigint() - start) / 1e3 / parses;
  let bytes = 0;
  start = process.hrtime.bigint();
  for (let n = 0; n < iterations; ++n) bytes = Buffer.byteLength(template.render(context(config)), "utf8");
  const renderUs = Number(process.hrtime.bigint() - start) / 1e3 / iterations;
  report[configPath] = { parse_us: parseUs, render_us: renderUs, renders_per_s: 1e6 / renderUs, output_bytes: bytes };
}
process.stdout.write(JSON.stringify(report) + "\n");
