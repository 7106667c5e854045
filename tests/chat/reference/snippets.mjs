// Renders small templates (snippets.json: [{"template": ..., "context": {...}}]) with
// @huggingface/jinja and prints [{"ok": true, "text": ...} | {"ok": false, "error": ...}].
//   node snippets.mjs NODE_MODULES_DIR SNIPPETS_JSON
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import path from "node:path";

const [modulesDir, snippetsPath] = process.argv.slice(2);
const { Template } = await import(pathToFileURL(path.join(modulesDir, "@huggingface/jinja/dist/index.js")).href);
const out = [];
for (const s of JSON.parse(readFileSync(snippetsPath, "utf8"))) {
  try {
    out.push({ ok: true, text: new Template(s.template).render(s.context ?? {}) });
  } catch (e) {
    out.push({ ok: false, error: String(e.message ?? e) });
  }
}
process.stdout.write(JSON.stringify(out));
