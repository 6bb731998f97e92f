// Loads the Kubernetes client bundle (dist/k8s-client.cjs). The executable carries it as a SEA asset next to a V8
// code cache that the build recorded *after running* the client, so the cache covers the functions that run when it
// loads (Node's own `useCodeCache` only covers a script's top level). Bundled into dist/hereabouts.cjs in place of
// `@kubernetes/client-node` (see plugins.mjs), so it runs when, and only when, a module importing the client runs.
// build/train-code-cache.mjs compiles the client with the same functions, which is what makes the cache match.
'use strict';
const vm = require('node:vm');

const clientAsset = 'k8s-client.cjs';
const cacheAsset = 'k8s-client.cache';
const wrapperHead = '(function (exports, require, module, __filename, __dirname) {';
const wrapperTail = '\n})';

/** @returns {import('node:vm').Script} */
function compileClient(source, cachedData) {
  return new vm.Script(wrapperHead + source + wrapperTail, { filename: clientAsset, cachedData });
}

/** Runs the compiled client; it only ever requires Node built-ins (the build checks), so `require` is enough. */
function evaluateClient(script) {
  const module = { exports: {} };
  script.runInThisContext()(module.exports, require, module, clientAsset, '.');
  return module.exports;
}

function readClient() {
  const sea = require('node:sea');
  if (sea.isSea()) {
    return { source: sea.getAsset(clientAsset, 'utf8'), cachedData: new Uint8Array(sea.getRawAsset(cacheAsset)) };
  }
  // `node dist/hereabouts.cjs` while debugging the bundle: the files beside it.
  const { readFileSync } = require('node:fs');
  const { join } = require('node:path');
  return {
    source: readFileSync(join(__dirname, clientAsset), 'utf8'),
    cachedData: readFileSync(join(__dirname, cacheAsset)),
  };
}

function loadClient() {
  const { source, cachedData } = readClient();
  const script = compileClient(source, cachedData);
  // Same wording as Node's own SEA warning; a rejected cache still works, only slower, and tests watch stderr.
  if (script.cachedDataRejected === true) process.emitWarning(`Code cache data rejected for ${clientAsset}.`);
  return evaluateClient(script);
}

module.exports = { compileClient, evaluateClient, loadClient };
