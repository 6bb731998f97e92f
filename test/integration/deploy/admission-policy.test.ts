// deploy/admission-policy.yaml on the real kube-apiserver: every bad kind of hereabouts/whereabouts IPAM config is
// refused when the NAD is written, with the words the plugin's own parser uses for it (the same parser `hereabouts
// preflight` runs, whose `admission` flag must agree with the policy), and good configs are admitted. The shipped
// policy is applied as it is; its binding is the shipped one, narrowed to this file's namespace, so that suites
// sharing the control plane never meet it.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { load, loadAll } from 'js-yaml';
import {
  api,
  apiRequest,
  controlPlane,
  createNamespace,
  privateControlPlane,
  stopControlPlane,
  type ControlPlane,
  type Namespace,
} from '../../support/control-plane.ts';
import { repoRoot } from '../../support/paths.ts';
import { judgeNad } from '../../../src/cli/preflight-judge.ts';

const ADMISSION = '/apis/admissionregistration.k8s.io/v1';
const NADS = (ns: string): string => `/apis/k8s.cni.cncf.io/v1/namespaces/${ns}/network-attachment-definitions`;

interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
  spec: Record<string, unknown>;
}
const shipped = loadAll(readFileSync(join(repoRoot, 'deploy', 'admission-policy.yaml'), 'utf8')) as Manifest[];
const policy = shipped.find((o) => o.kind === 'ValidatingAdmissionPolicy')!;
const binding = shipped.find((o) => o.kind === 'ValidatingAdmissionPolicyBinding')!;

type Config = Record<string, unknown>;
const wb = (extra: Record<string, unknown> = {}): Config => ({
  cniVersion: '0.3.1',
  name: 'net',
  type: 'macvlan',
  master: 'eth0',
  ipam: { type: 'whereabouts', range: '10.1.0.0/24', ...extra },
});
const text = (config: Config | string): string => (typeof config === 'string' ? config : JSON.stringify(config, null, 2));

/** Creates (or replaces) a cluster-scoped object. */
async function put(cp: ControlPlane, plural: string, object: Manifest): Promise<void> {
  const res = await apiRequest(cp, 'POST', `${ADMISSION}/${plural}`, object);
  if (res.status === 201) return;
  assert.equal(res.status, 409, JSON.stringify(res.body));
  const current = (await api(cp, 'GET', `${ADMISSION}/${plural}/${object.metadata.name}`)) as { metadata: { resourceVersion: string } };
  await api(cp, 'PUT', `${ADMISSION}/${plural}/${object.metadata.name}`, { ...object, metadata: { ...object.metadata, resourceVersion: current.metadata.resourceVersion } });
}

describe('admission policy deploy/admission-policy.yaml', () => {
  let cp: ControlPlane;
  let ns: Namespace;
  let bindingName: string;
  let count = 0;
  /** A server-side dry-run create: admitted, or the policy's message without the API server's prefix. */
  const write = async (config: Config | string): Promise<{ admitted: boolean; message: string }> => {
    const name = `nad-${++count}`;
    const res = await apiRequest(cp, 'POST', `${NADS(ns.name)}?dryRun=All`, {
      apiVersion: 'k8s.cni.cncf.io/v1',
      kind: 'NetworkAttachmentDefinition',
      metadata: { name },
      spec: { config: text(config) },
    });
    if (res.status === 201) return { admitted: true, message: '' };
    const message = (res.body as { message?: string }).message ?? JSON.stringify(res.body);
    const prefix = `ValidatingAdmissionPolicy '${policy.metadata.name}' with binding '${bindingName}' denied request: `;
    // The API server's own words first ('... "nad-1" is forbidden: '), then the policy's; the code is 422 (Invalid).
    assert.equal(res.status, 422, message);
    const at = message.indexOf(prefix);
    assert.ok(at >= 0, message);
    return { admitted: false, message: message.slice(at + prefix.length) };
  };

  before(async () => {
    cp = await controlPlane();
    ns = await createNamespace(cp, 'admission');
    // A NAD written before the policy existed, whose config the policy refuses (for the UPDATE tests).
    await api(cp, 'POST', NADS(ns.name), {
      apiVersion: 'k8s.cni.cncf.io/v1',
      kind: 'NetworkAttachmentDefinition',
      metadata: { name: 'legacy' },
      spec: { config: text(wb({ range: '10.1.0.0/33' })) },
    });
    bindingName = `${binding.metadata.name}-${ns.name}`;
    await put(cp, 'validatingadmissionpolicies', policy);
    await put(cp, 'validatingadmissionpolicybindings', {
      ...binding,
      metadata: { ...binding.metadata, name: bindingName },
      spec: { ...binding.spec, matchResources: { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns.name } } } },
    });
    // The API server picks up new policies and bindings from its informers: wait until a bad config is refused.
    const deadline = Date.now() + 60_000;
    while ((await write(wb({ range: '10.1.0.0/33' }))).admitted) {
      assert.ok(Date.now() < deadline, 'the policy refused nothing within 60 s');
      await new Promise((r) => setTimeout(r, 200));
    }
  });
  after(async () => {
    await apiRequest(cp, 'DELETE', `${ADMISSION}/validatingadmissionpolicybindings/${bindingName}`);
    await apiRequest(cp, 'DELETE', `${ADMISSION}/validatingadmissionpolicies/${policy.metadata.name}`);
    await api(cp, 'DELETE', NADS(ns.name));
    await ns.cleanup();
  });

  test('the shipped binding binds the shipped policy in every namespace, and denies', () => {
    assert.deepEqual(binding.spec, { policyName: policy.metadata.name, validationActions: ['Deny'] });
  });

  // Each bad kind: the policy refuses it with the plugin's words (the parser's message for a refusal; for a bound
  // outside the usable addresses, which the plugin ignores with a warning, the warning's words and the advice).
  const bad: Array<[string, Config | string]> = [
    ['a range without a prefix length', wb({ range: '10.1.0.0' })],
    ['a range with a bad address', wb({ range: '10.1.0.x/24' })],
    ['an IPv4 prefix length above 32', wb({ range: '10.1.0.0/33' })],
    ['an IPv6 prefix length above 128', wb({ range: 'fd00::/129' })],
    ['a prefix length that is no number', wb({ range: '10.1.0.0/2x' })],
    ['A-B/len with a bad start', wb({ range: '10.1.0.300-10.1.0.9/24' })],
    ['A-B/len without a prefix length', wb({ range: '10.1.0.5-10.1.0.9' })],
    ['A-B/len with a bad end', wb({ range: '10.1.0.5-10.1.0/24' })],
    ['A-B/len mixing families', wb({ range: '10.1.0.5-fd00::9/64' })],
    ['A-B/len with A outside B/len', wb({ range: '10.1.1.5-10.1.0.9/24' })],
    ['a range that is a number', wb({ range: 5 })],
    ['ipRanges that is no list', wb({ ipRanges: { range: '10.2.0.0/24' } })],
    ['an ipRanges entry that is no object', wb({ ipRanges: ['10.2.0.0/24'] })],
    ['an ipRanges entry without a range', wb({ ipRanges: [{ range_start: '10.2.0.5' }] })],
    ['a bad range in the second ipRanges entry', wb({ ipRanges: [{ range: '10.2.0.0/24' }, { range: 'fd00::/200' }] })],
    ['a range_start that is no address', wb({ range_start: '10.1.0' })],
    ['a range_start that is a number', wb({ range_start: 5 })],
    ['a range_end of the other family', wb({ range_end: 'fd00::9' })],
    ['a range_end before range_start', wb({ range_start: '10.1.0.50', range_end: '10.1.0.20' })],
    ['a range_start outside the range', wb({ range_start: '10.1.1.5' })],
    ['a range_start on the network address', wb({ range_start: '10.1.0.0' })],
    ['a range_end on the broadcast address', wb({ range_end: '10.1.0.255' })],
    ['a range_end on the last address of a /27', wb({ range: '10.1.0.0/27', range_end: '10.1.0.31' })],
    ['an IPv6 range_end on the last address of a /64', wb({ range: 'fd00:1::/64', range_end: 'fd00:1::ffff:ffff:ffff:ffff' })],
    ['an IPv6 range_end outside a /125', wb({ range: 'fd00:1::/125', range_end: 'fd00:1::9' })],
    ['an ipRanges range_start outside its range', wb({ ipRanges: [{ range: 'fd00:2::/64', range_start: 'fd00:3::1' }] })],
    ['identical ipRanges', wb({ range: undefined, ipRanges: [{ range: '10.2.0.0/24' }, { range: '10.2.0.0/24', range_start: '10.2.0.9' }] })],
    ['an ipRanges entry inside range', wb({ ipRanges: [{ range: '10.1.0.128/25' }] })],
    ['range inside an ipRanges entry', wb({ ipRanges: [{ range: '10.9.9.9/8' }] })],
    ['overlapping IPv6 ranges', wb({ range: 'fd00::/48', ipRanges: [{ range: 'fd00:0:0:1::/64' }] })],
    ['a node_slice_size shorter than the range', wb({ node_slice_size: '/20' })],
    ['a node_slice_size that is no prefix length', wb({ node_slice_size: 'x' })],
    ['a node_slice_size of 0', wb({ node_slice_size: 0 })],
    ['a node_slice_size longer than an IPv4 address', wb({ node_slice_size: 64 })],
    ['a network_name in upper case', wb({ network_name: 'Blue' })],
    ['a network_name with an underscore', wb({ network_name: 'blue_net' })],
    ['a network_name of 64 characters', wb({ network_name: 'a'.repeat(64) })],
    ['a network_name starting with "-"', wb({ network_name: '-net' })],
    ['a network_name that is a number', wb({ network_name: 5 })],
    ['type "hereabouts"', { ...wb(), ipam: { type: 'hereabouts', range: '10.1.0.0/33' } }],
    [
      'the second plugin of a conflist',
      { cniVersion: '1.0.0', name: 'chain', plugins: [{ type: 'tuning' }, { type: 'macvlan', ipam: { type: 'whereabouts', range: 'fd00::/64', range_start: 'fd00::1:0:0:0:1' } }] },
    ],
  ];
  for (const [label, config] of bad) {
    test(`refused: ${label}, in the plugin's words`, async () => {
      const judged = judgeNad({ metadata: { namespace: 'x', name: 'y' }, spec: { config: text(config) } });
      if (judged.kind !== 'judged') assert.fail(`preflight judges it: ${JSON.stringify(judged)}`);
      const findings = judged.findings.filter((f) => f.admission === true);
      assert.equal(findings.length, 1, `preflight flags one finding for the policy: ${JSON.stringify(judged)}`);
      const [finding] = findings;
      const words =
        finding!.kind === 'refused'
          ? finding!.message
          : `${finding!.message.replace('; ignored, as Whereabouts does', '')}: set it inside the range or remove it (the plugin would ignore it, as Whereabouts does)`;
      const written = await write(config);
      assert.deepEqual(written, { admitted: false, message: words });
    });
  }

  test('refused: two problems in one config are both named, in the plugin\'s order', async () => {
    const written = await write(wb({ range: '10.1.0.0/33', network_name: 'Blue' }));
    assert.equal(written.admitted, false);
    assert.match(written.message, /^ipam\.range: range "10\.1\.0\.0\/33": prefix length "33" is not 0-32; ipam\.network_name "Blue" must be/);
  });

  const good: Array<[string, Config | string]> = [
    ['a plain Whereabouts config', wb()],
    ['type "hereabouts" with A-B/len', { ...wb(), ipam: { type: 'hereabouts', range: '10.1.0.10-10.1.0.50/24' } }],
    ['a /32 and a /31 whose range_start is its network address', wb({ range: '10.1.0.7/32', ipRanges: [{ range: '10.1.1.0/31', range_start: '10.1.1.0' }] })],
    [
      'dual-stack ipRanges with bounds, excludes, routes and dns',
      wb({
        range: undefined,
        ipRanges: [
          { range: '10.2.0.0/24', range_start: '10.2.0.10', range_end: '10.2.0.254', exclude: ['10.2.0.32/28', '10.2.0.77'] },
          { range: 'fd00:2::/64', range_end: 'fd00:2::ffff:ffff:ffff:fffe' },
        ],
        gateway: '10.2.0.1',
        routes: [{ dst: '0.0.0.0/0', gw: '10.2.0.1' }],
        dns: { nameservers: ['10.2.0.2'], search: ['example.org'] },
      }),
    ],
    [
      'bounds on the last usable addresses of a /27 and an IPv6 /125',
      wb({ range: '10.1.0.0/27', range_start: '10.1.0.1', range_end: '10.1.0.30', ipRanges: [{ range: 'fd00:1::/125', range_end: 'fd00:1::6' }] }),
    ],
    ['node_slice_size as "/26", with network_name', wb({ node_slice_size: '/26', network_name: 'blue.net-1' })],
    ['node_slice_size as 24 (the range\'s own prefix)', wb({ node_slice_size: 24 })],
    ['an escaped "/" in the range', '{"cniVersion": "0.3.1", "name": "n", "type": "macvlan", "ipam": {"type": "whereabouts", "range": "10.1.0.0\\/24"}}'],
    ['a key written twice, the last one good (JSON.parse keeps the last)', '{"name": "n", "type": "macvlan", "ipam": {"type": "whereabouts", "range": "10.1.0.0/33", "range": "10.1.0.0/24"}}'],
    ['an IPv4-mapped IPv6 range (left to the plugin)', wb({ range: '::ffff:10.1.0.0/120', network_name: 'mapped' })],
    ['another IPAM, however it looks', { cniVersion: '1.0.0', name: 'n', type: 'bridge', ipam: { type: 'host-local', ranges: [[{ subnet: '10.1.0.0/33' }]], range: 'bogus' } }],
    ['no config at all (Multus reads the node\'s file)', ''],
  ];
  for (const [label, config] of good) {
    test(`admitted: ${label}`, async () => {
      assert.deepEqual(await write(config), { admitted: true, message: '' });
      if (config === '') return;
      const judged = judgeNad({ metadata: { namespace: 'x', name: 'y' }, spec: { config: text(config) } });
      const flagged = judged.kind === 'judged' ? judged.findings.filter((f) => f.admission === true) : [];
      assert.deepEqual(flagged, [], 'preflight flags nothing for the policy');
    });
  }

  test('admitted: every NAD and conflist of cni-conf-examples/', async () => {
    const dir = join(repoRoot, 'cni-conf-examples');
    const files = readdirSync(dir).filter((f) => /\.(conflist|yaml)$/.test(f));
    assert.ok(files.length >= 5, files.join());
    for (const file of files) {
      const content = readFileSync(join(dir, file), 'utf8');
      const config = file.endsWith('.yaml') ? (load(content) as { spec: { config: string } }).spec.config : content;
      assert.deepEqual(await write(config), { admitted: true, message: '' }, file);
    }
  });

  test('what the policy does not read it admits, though the plugin refuses it (docs/admission-policy.md lists these)', async () => {
    const unread: Array<[string, Config | string]> = [
      ['an ipam object nested deeper than any key needs', wb({ range: '10.1.0.0/33', extra: { a: { b: { c: 1 } } } })],
      ['a \\u escape in the range', '{"name": "n", "type": "macvlan", "ipam": {"type": "whereabouts", "range": "10.1.0.0\\u002f33"}}'],
      [
        'an overlap in the 33rd ipRanges entry',
        wb({ range: undefined, ipRanges: [...Array.from({ length: 32 }, (_, i) => ({ range: `10.2.${i}.0/24` })), { range: '10.2.0.0/16' }] }),
      ],
      [
        'a bad range in the 9th hereabouts plugin of a conflist',
        {
          cniVersion: '1.0.0',
          name: 'chain',
          plugins: Array.from({ length: 9 }, (_, i) => ({ type: 'macvlan', ipam: { type: 'hereabouts', range: i === 8 ? '10.1.0.0/33' : `10.3.${i}.0/24` } })),
        },
      ],
    ];
    for (const [label, config] of unread) {
      const judged = judgeNad({ metadata: { namespace: 'x', name: 'y' }, spec: { config: text(config) } });
      assert.ok(judged.kind === 'judged' && judged.verdict === 'refuses', `the plugin refuses ${label}`);
      assert.deepEqual(await write(config), { admitted: true, message: '' }, label);
    }
    // One entry or plugin less, and the policy sees it.
    const entries = Array.from({ length: 31 }, (_, i) => ({ range: `10.2.${i}.0/24` }));
    assert.match((await write(wb({ range: undefined, ipRanges: [...entries, { range: '10.2.0.0/16' }] }))).message, /^ipam\.ipRanges\[31\]\.range "10\.2\.0\.0\/16" overlaps ipam\.ipRanges\[0\]\.range/);
  });

  // CEL's cost is counted, not timed: an ipam object this large is judged on every API server of this version.
  test('an ipam object of 40 000 characters is judged; one of 120 000 exceeds the CEL cost limit and is admitted (failurePolicy Ignore)', async () => {
    const padded = (n: number) => wb({ range: '10.1.0.0/33', note: 'x'.repeat(n) });
    assert.deepEqual(await write(padded(40_000)), {
      admitted: false,
      message: 'ipam.range: range "10.1.0.0/33": prefix length "33" is not 0-32',
    });
    assert.deepEqual(await write(padded(120_000)), { admitted: true, message: '' });
  });

  test('an old NAD keeps its config: a label added is admitted, a config change is judged', async () => {
    const path = `${NADS(ns.name)}/legacy`;
    const patch = (body: unknown) => apiRequest(cp, 'PATCH', path, body, 'application/merge-patch+json');
    const labelled = await patch({ metadata: { labels: { team: 'blue' } } });
    assert.equal(labelled.status, 200, JSON.stringify(labelled.body));
    const still = await patch({ spec: { config: text(wb({ range: '10.1.0.0/34' })) } });
    assert.equal(still.status, 422);
    assert.match((still.body as { message: string }).message, /denied request: ipam\.range: range "10\.1\.0\.0\/34": prefix length "34" is not 0-32$/);
    const fixed = await patch({ spec: { config: text(wb()) } });
    assert.equal(fixed.status, 200, JSON.stringify(fixed.body));
  });
});

// The oldest API server the policy is for: a 1.31 kube-apiserver compiles new policies with the CEL libraries of
// 1.30 (IP and CIDR among them). kube-apiserver 1.33 emulating 1.31 does the same; the shipped objects apply as they
// are (the binding in every namespace: this control plane is private) and the policy refuses and admits.
describe('admission policy on a Kubernetes 1.31 API server', () => {
  let cp: ControlPlane;
  before(async () => {
    cp = await privateControlPlane({ emulatedVersion: '1.31' });
  });
  after(() => {
    stopControlPlane(cp);
  });

  test('the shipped policy and binding are accepted, and judge NADs', async () => {
    const version = (await api(cp, 'GET', '/version')) as { emulationMajor?: string; emulationMinor?: string };
    assert.deepEqual([version.emulationMajor, version.emulationMinor], ['1', '31']);
    await put(cp, 'validatingadmissionpolicies', policy);
    await put(cp, 'validatingadmissionpolicybindings', binding);
    const create = (config: Config) =>
      apiRequest(cp, 'POST', `${NADS('default')}?dryRun=All`, {
        apiVersion: 'k8s.cni.cncf.io/v1',
        kind: 'NetworkAttachmentDefinition',
        metadata: { name: 'n' },
        spec: { config: text(config) },
      });
    const deadline = Date.now() + 60_000;
    let refused = await create(wb({ range: 'fd00::/64', range_start: 'fd00:1::1' }));
    while (refused.status === 201 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200));
      refused = await create(wb({ range: 'fd00::/64', range_start: 'fd00:1::1' }));
    }
    assert.equal(refused.status, 422, JSON.stringify(refused.body));
    assert.match(
      (refused.body as { message: string }).message,
      /denied request: ipam\.range_start fd00:1::1 is outside the usable addresses of fd00::\/64: /,
    );
    assert.equal((await create(wb({ ipRanges: [{ range: 'fd00::/64' }] }))).status, 201);
  });
});

