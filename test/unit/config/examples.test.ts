// Every file in cni-conf-examples/ is a configuration hereabouts accepts, so the README's examples cannot rot.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import yaml from 'js-yaml';
import { parseNetworkConfig } from '../../../src/config/parse.ts';
import { repoRoot } from '../../support/paths.ts';

const dir = join(repoRoot, 'cni-conf-examples');
const noFlatFile = { readFile: () => undefined };

/** The single-plugin network configurations a runtime would hand to the plugin that delegates to us. */
function networkConfigs(file: string): Array<Record<string, unknown>> {
  const text = readFileSync(join(dir, file), 'utf8');
  if (file.endsWith('.yaml')) {
    const nad = yaml.load(text) as { kind: string; spec: { config: string } };
    assert.equal(nad.kind, 'NetworkAttachmentDefinition');
    return [JSON.parse(nad.spec.config) as Record<string, unknown>];
  }
  const conf = JSON.parse(text) as { cniVersion: string; name: string; plugins?: Array<Record<string, unknown>> };
  const plugins = conf.plugins ?? [conf as unknown as Record<string, unknown>];
  return plugins.filter((p) => p['ipam'] !== undefined).map((p) => ({ ...p, cniVersion: conf.cniVersion, name: conf.name }));
}

const files = readdirSync(dir).filter((f) => /\.(conflist|conf|json|yaml)$/.test(f));

test('cni-conf-examples/ holds the examples the README lists', () => {
  assert.deepEqual(files.sort(), ['bridge-local.conflist', 'dual-stack-local.conflist', 'macvlan-local.conflist', 'multus-nad-kubernetes.yaml']);
});

for (const file of files) {
  test(`example ${file} parses into a valid hereabouts config`, () => {
    const configs = networkConfigs(file);
    assert.ok(configs.length > 0, 'has an ipam section');
    for (const conf of configs) {
      const parsed = parseNetworkConfig(conf, { cniVersion: String(conf['cniVersion']), ...noFlatFile });
      assert.ok(parsed.ipam.ranges.length > 0);
    }
  });
}

test('the dual-stack example yields one IPv4 and one IPv6 range', () => {
  const [conf] = networkConfigs('dual-stack-local.conflist');
  const parsed = parseNetworkConfig(conf!, { cniVersion: '1.0.0', ...noFlatFile });
  assert.deepEqual(parsed.ipam.ranges.map((r) => r.cidr.family), [4, 6]);
});

test('the Multus example uses the kubernetes datastore with node slices', () => {
  const [conf] = networkConfigs('multus-nad-kubernetes.yaml');
  const parsed = parseNetworkConfig(conf!, { cniVersion: '1.0.0', ...noFlatFile });
  assert.equal(parsed.ipam.datastore.kind, 'kubernetes');
  assert.equal(parsed.ipam.nodeSliceSize, 24);
  assert.equal(parsed.ipam.networkName, 'net1');
});
