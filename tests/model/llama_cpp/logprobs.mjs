// llama.cpp's log-probabilities for every position of a token-id prompt, through node-llama-cpp's
// prebuilt CPU build: f32 KV cache, flash attention off, temperature 1 with no truncation, so
// the probabilities are the plain softmax of the logits.
//   node logprobs.mjs MODEL.gguf 1,2,3 TOP OUT.json  ->  [[[id, logprob], ...top], ...per position]
// Prints llama.cpp's own timings (llama_perf_context_print) to stderr.
// OMNI_NODE_MODULES: the folder holding node-llama-cpp (ES modules ignore NODE_PATH).
import {writeFileSync} from "node:fs";
import {join} from "node:path";
import {pathToFileURL} from "node:url";

const modules = process.env.OMNI_NODE_MODULES;
const {getLlama, LlamaLogLevel} = await import(pathToFileURL(join(modules, "node-llama-cpp/dist/index.js")).href);

const [model_path, token_list, top_text, out_path] = process.argv.slice(2);
const tokens = token_list.split(",").map(Number);
const top = Number(top_text);
const llama = await getLlama({gpu: false, build: "never", logLevel: LlamaLogLevel.warn});
const model = await llama.loadModel({modelPath: model_path, gpuLayers: 0});
const context = await model.createContext({
  contextSize: Math.max(64, tokens.length + 8), batchSize: Math.max(64, tokens.length + 8),
  flashAttention: false, experimentalKvCacheKeyType: "F32", experimentalKvCacheValueType: "F32",
  threads: 1,
});
const sequence = context.getSequence();
const options = {temperature: 1, topK: 0, topP: 1, minP: 0, seed: 1};
const input = tokens.map((t) => [t, {generateNext: {probabilities: true, options}}]);
const results = await sequence.controlledEvaluate(input);
const out = results.map((r) => {
  const rows = [];
  for (const [id, p] of r.next.probabilities) {
    rows.push([id, Math.log(p)]);
    if (rows.length >= top) break;
  }
  return rows;
});
writeFileSync(out_path, JSON.stringify(out));
await context.dispose();
await model.dispose();
