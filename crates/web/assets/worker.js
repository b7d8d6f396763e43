// distsync web: the in-browser engine's Web Worker (the static build). It loads the API compiled
// to WebAssembly (distsync_web_wasm.js and its .wasm, written by scripts/build-static.sh next to
// this file) and answers the page's requests one at a time, off the page's thread.
"use strict";

importScripts("distsync_web_wasm.js");

const ready = (async () => {
  await wasm_bindgen({ module_or_path: "distsync_web_wasm_bg.wasm" });
  const seed = new Uint8Array(32);
  crypto.getRandomValues(seed);
  return new wasm_bindgen.Engine(seed);
})();

ready.catch((e) => postMessage({ fatal: "the in-browser engine cannot start: " + e }));

onmessage = async (e) => {
  const { id, method, path, body } = e.data;
  const engine = await ready;
  const q = path.indexOf("?");
  const [p, query] = q < 0 ? [path, ""] : [path.slice(0, q), path.slice(q + 1)];
  let answer;
  try {
    answer = engine.handle(method, p, query, body);
  } catch (err) {
    postMessage({ id, status: 500, contentType: "application/json", body: JSON.stringify({ error: "the engine failed: " + err }) });
    return;
  }
  postMessage({ id, status: answer.status, contentType: answer.content_type, body: answer.body });
  answer.free();
};
