// The SEA entry point. It runs the real bundle (a SEA asset) with a V8 code cache the build recorded *after
// running* the CNI verbs (build/train-main-cache.mjs): Node's own `useCodeCache` covers only a script's top level,
// so without this every function of the ADD path is compiled on every pod start. A rejected cache (another V8 or
// other flags) is harmless: the bundle is then compiled as usual.
'use strict';
const vm = require('node:vm');
const sea = require('node:sea');

const bundleAsset = 'hereabouts.cjs';
const cacheAsset = 'hereabouts.cache';
const wrapperHead = '(function (exports, require, module, __filename, __dirname) {';
const wrapperTail = '\n})';

function compileMain(source, cachedData) {
  return new vm.Script(wrapperHead + source + wrapperTail, { filename: bundleAsset, cachedData });
}

function runMain(script, entry) {
  const module = { exports: {} };
  script.runInThisContext()(module.exports, require, module, entry, require('node:path').dirname(entry));
}

/**
 * With `--node-options=--enable-source-maps` (debugging, speed no concern) the bundle is compiled by Node's CommonJS
 * loader instead, the only compiler that registers a source map: as if it lay beside the executable, so stack traces
 * map through the `hereabouts.cjs.map` found there. `require` stays this loader's (Node built-ins only).
 */
function runMainWithSourceMaps(source) {
  const { dirname, join } = require('node:path');
  const Module = require('node:module');
  const filename = join(dirname(process.execPath), bundleAsset);
  const mod = new Module(filename);
  mod.filename = filename;
  mod.require = require;
  mod._compile(source, filename, 'commonjs');
}

if (sea.isSea()) {
  const source = sea.getAsset(bundleAsset, 'utf8');
  if (process.sourceMapsEnabled) runMainWithSourceMaps(source);
  else runMain(compileMain(source, new Uint8Array(sea.getRawAsset(cacheAsset))), process.execPath);
}

module.exports = { compileMain, runMain };
