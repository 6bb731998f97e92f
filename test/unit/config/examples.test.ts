// Every file in cni-conf-examples/ is a configuration hereabouts accepts, so the README's examples cannot rot.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import yaml from 'js-yaml';
import { parseNetworkConfig } from '../../../src/config/parse.ts';
import { renderFlatConfig } from '../../../src/install/host-files.ts';
import { poolRefs } from '../../../src/store/pool-refs.ts';
import { repoRoot } from '../../support/paths.ts';

const dir = join(repoRoot, 'cni-conf-examples');
const noFlatFile = { readFile: () => undefined };
/** What a node installed by the DaemonSet has: the installer's flat file (it supplies the kubeconfig). */
const installedFlatFile = (path: string): string | undefined =>
  path === '/etc/cni/net.d/hereabouts.d/hereabouts.conf'
    ? renderFlatConfig('/etc/cni/net.d/hereabouts.d/hereabouts.kubeconfig')
    : undefined;
/** NADs that name no kubeconfig rely on the installer's flat file. */
const namesKubeconfig = (conf: Record<string, unknown>): boolean =>
  JSON.stringify(conf).includes('"kubeconfig"') || JSON.stringify(conf).includes('"datastore":"local"');

/** The single-plugin network configurations a runtime would hand to the plugin that delegates to us. */
function networkConfigs(file: string): Array<Record<string, unknown>> {
  const text = readFileSync(join(dir, file), 'utf8');
  if (file.endsWith('.yaml')) {
    const nad = yaml.load(text) as { kind: string; spec: { config: string } };
    assert.equal(nad.kind, 'NetworkAttachmentDefinition');
    return [JSON.parse(nad.spec.config) as Record<string, unknown>];
  }
  const conf = JSON.parse(text) as { cniVersion: string; name: string; plugins?: Array<Record<string, unknown>> };
  const plugins = conf.plugins ?? [conf];
  return plugins
    .filter((p) => p['ipam'] !== undefined)
    .map((p) => ({ ...p, cniVersion: conf.cniVersion, name: conf.name }));
}

const files = readdirSync(dir).filter((f) => /\.(conflist|conf|json|yaml)$/.test(f));

test('cni-conf-examples/ holds the examples the README lists', () => {
  assert.deepEqual(files.sort(), [
    'bridge-local.conflist',
    'dual-stack-local.conflist',
    'macvlan-local.conflist',
    'multus-nad-dual-stack.yaml',
    'multus-nad-ipv6.yaml',
    'multus-nad-kubernetes.yaml',
  ]);
});

for (const file of files) {
  test(`example ${file} parses into a valid hereabouts config`, () => {
    const configs = networkConfigs(file);
    assert.ok(configs.length > 0, 'has an ipam section');
    for (const conf of configs) {
      const readFile = namesKubeconfig(conf) ? noFlatFile.readFile : installedFlatFile;
      const parsed = parseNetworkConfig(conf, { cniVersion: String(conf['cniVersion']), readFile });
      assert.ok(parsed.ipam.ranges.length > 0);
    }
  });
}

test('the dual-stack example yields one IPv4 and one IPv6 range', () => {
  const [conf] = networkConfigs('dual-stack-local.conflist');
  const parsed = parseNetworkConfig(conf!, { cniVersion: '1.0.0', ...noFlatFile });
  assert.deepEqual(
    parsed.ipam.ranges.map((r) => r.cidr.family),
    [4, 6],
  );
});

test('the Multus example uses the kubernetes datastore with node slices', () => {
  const [conf] = networkConfigs('multus-nad-kubernetes.yaml');
  const parsed = parseNetworkConfig(conf!, { cniVersion: '1.0.0', ...noFlatFile });
  assert.equal(parsed.ipam.datastore.kind, 'kubernetes');
  assert.equal(parsed.ipam.nodeSliceSize, 24);
  assert.equal(parsed.ipam.networkName, 'net1');
});

test('the IPv6 NAD: Kubernetes datastore, kubeconfig from the flat file, /64 node slices of a /48', () => {
  const [conf] = networkConfigs('multus-nad-ipv6.yaml');
  assert.throws(
    () => parseNetworkConfig(conf!, { cniVersion: '1.0.0', ...noFlatFile }),
    /needs ipam\.kubernetes\.kubeconfig/,
  );
  const parsed = parseNetworkConfig(conf!, { cniVersion: '1.0.0', readFile: installedFlatFile });
  assert.equal(parsed.ipam.datastore.kind, 'kubernetes');
  assert.deepEqual(
    parsed.ipam.ranges.map((r) => [r.cidr.family, r.cidr.prefix]),
    [[6, 48]],
  );
  assert.equal(parsed.ipam.nodeSliceSize, 64);
  assert.equal(parsed.ipam.networkName, 'v6net');
});

test('the dual-stack NAD: Kubernetes datastore, one IPv4 and one IPv6 pool with the names its comment gives', () => {
  const [conf] = networkConfigs('multus-nad-dual-stack.yaml');
  assert.throws(
    () => parseNetworkConfig(conf!, { cniVersion: '1.0.0', ...noFlatFile }),
    /needs ipam\.kubernetes\.kubeconfig/,
  );
  const parsed = parseNetworkConfig(conf!, { cniVersion: '1.0.0', readFile: installedFlatFile });
  assert.equal(parsed.ipam.datastore.kind, 'kubernetes');
  assert.deepEqual(
    parsed.ipam.ranges.map((r) => r.cidr.family),
    [4, 6],
  );
  assert.equal(parsed.ipam.nodeSliceSize, undefined);
  assert.equal(parsed.ipam.enableOverlappingRanges, true);
  assert.deepEqual(
    poolRefs(parsed).map((p) => p.name),
    ['ds-10.30.0.0-16', 'ds-fd00-30---64'],
  );
});
