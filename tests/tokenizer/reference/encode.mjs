// Reference ids from Hugging Face tokenizers (the Rust library through @anush008/tokenizers).
// usage: node encode.mjs TOOLS_DIR tokenizer.json corpus.jsonl out.jsonl
// Writes one line per corpus document: {"ids": [...], "decoded": "..."} (no special tokens added).
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';

const [toolsDir, tokenizerPath, corpusPath, outPath] = process.argv.slice(2);
const require = createRequire(import.meta.url);
const { Tokenizer } = require(`${path.resolve(toolsDir)}/node_modules/@anush008/tokenizers`);
const tokenizer = Tokenizer.fromFile(tokenizerPath);
const out = fs.createWriteStream(outPath);
const lines = readline.createInterface({ input: fs.createReadStream(corpusPath), crlfDelay: Infinity });
for await (const line of lines) {
  if (!line) continue;
  const { text } = JSON.parse(line);
  const ids = (await tokenizer.encode(text, null, { addSpecialTokens: false })).getIds();
  const decoded = await tokenizer.decode(ids, false);
  if (!out.write(JSON.stringify({ ids, decoded }) + '\n')) await new Promise((r) => out.once('drain', r));
}
await new Promise((r) => out.end(r));
