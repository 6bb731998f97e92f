// `hereabouts preflight`'s judgement of NADs (pure): what the plugin's parser refuses, what it ignores, where it
// differs from Whereabouts, and the report around them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseNetworkConfig } from '../../../src/config/parse.ts';
import { judgeNad, type NadOutcome } from '../../../src/cli/preflight-judge.ts';
import { formatPreflight, preflightReport } from '../../../src/cli/preflight-report.ts';

const nad = (name: string, config: unknown, namespace = 'ns') => ({
  metadata: { namespace, name },
  spec: { config: typeof config === 'string' ? config : JSON.stringify(config) },
});
const conf = (ipam: Record<string, unknown>) => ({ cniVersion: '0.3.1', name: 'net', type: 'macvlan', ipam });
const wb = (extra: Record<string, unknown> = {}) => conf({ type: 'whereabouts', range: '10.1.0.0/24', ...extra });

function judged(outcome: NadOutcome) {
  if (outcome.kind !== 'judged') assert.fail(`not judged: ${JSON.stringify(outcome)}`);
  return outcome;
}

test('judgeNad() serves a plain Whereabouts NAD as Whereabouts did: no findings', () => {
  const j = judged(
    judgeNad(nad('a', wb({ kubernetes: { kubeconfig: '/etc/cni/net.d/whereabouts.d/whereabouts.kubeconfig' } }))),
  );
  assert.equal(j.verdict, 'same');
  assert.deepEqual(j.findings, []);
});

test('judgeNad() ignores an inline log_file outside the allowed log directories instead of refusing the NAD', () => {
  const j = judged(judgeNad(nad('a', wb({ log_file: '/tmp/whereabouts.log' }))));
  assert.equal(j.verdict, 'differs');
  assert.deepEqual(
    j.findings.map((f) => [f.kind, f.message]),
    [
      [
        'ignored',
        'ipam.log_file "/tmp/whereabouts.log" is outside the directories the node\'s operator allows for it (/var/log): ' +
          "ignored; the plugin logs where the node's flat file says",
      ],
    ],
  );
});

test('judgeNad() passes a log_file inside /var/log without a finding', () => {
  assert.deepEqual(judged(judgeNad(nad('a', wb({ log_file: '/var/log/whereabouts.log' })))).findings, []);
});

test('judgeNad() says what the lease keys do here (timings: only beside Whereabouts; sleep_for_race: nothing), and reconciler_cron_expression', () => {
  const j = judged(
    judgeNad(nad('a', wb({ sleep_for_race: 1, leader_lease_duration: 1500, reconciler_cron_expression: '* * * * *' }))),
  );
  assert.equal(j.verdict, 'differs');
  assert.deepEqual(
    j.findings.map((f) => f.message),
    [
      'ipam.leader_lease_duration: used only while a Whereabouts plugin still writes the pool, to take part in its Lease as Whereabouts does; hereabouts takes no cluster-wide lease of its own',
      'ipam.sleep_for_race: accepted and ignored (hereabouts takes no cluster-wide lease)',
      'ipam.reconciler_cron_expression: ignored (the controller reconciles every --reconcile-interval, and after pod deletions)',
    ],
  );
});

test('judgeNad() says a gateway inside the handed-out span is never handed out; one outside it changes nothing', () => {
  const inside = judged(judgeNad(nad('a', wb({ gateway: '10.1.0.1' }))));
  assert.deepEqual(
    inside.findings.map((f) => [f.kind, f.message]),
    [['differs', 'ipam.gateway 10.1.0.1 is never handed out (Whereabouts may hand it out to a pod)']],
  );
  assert.deepEqual(judged(judgeNad(nad('a', wb({ gateway: '10.1.0.1', range_start: '10.1.0.10' })))).findings, []);
  assert.deepEqual(judged(judgeNad(nad('a', wb({ gateway: '10.1.0.1', exclude: ['10.1.0.0/30'] })))).findings, []);
});

test("judgeNad() refuses what the plugin's parser refuses, in its words, with a fix, flagged when the admission policy refuses it too", () => {
  const config = wb({ range: '10.1.0.0/33' });
  let words = '';
  try {
    parseNetworkConfig(
      { ...config, ipam: { ...config.ipam, datastore: 'local' } },
      { cniVersion: '0.3.1', readFile: () => undefined, env: {} },
    );
  } catch (err) {
    words = (err as Error).message;
  }
  assert.equal(words, 'ipam.range: range "10.1.0.0/33": prefix length "33" is not 0-32');
  const j = judged(judgeNad(nad('a', config)));
  assert.equal(j.verdict, 'refuses');
  assert.deepEqual(j.findings, [
    {
      kind: 'refused',
      message: words,
      fix: 'write the range as a CIDR ("10.0.0.0/24") or as A-B/len with A inside B/len ("10.0.0.10-10.0.0.50/24")',
      admission: true,
    },
  ]);
});

test('judgeNad() refuses overlapping ranges, a bad node_slice_size and a bad network_name, each with its fix', () => {
  const cases: Array<[Record<string, unknown>, RegExp, RegExp]> = [
    [
      { ipRanges: [{ range: '10.1.0.0/25' }] },
      /^ipam\.ipRanges\[0\]\.range "10\.1\.0\.0\/25" overlaps ipam\.range "10\.1\.0\.0\/24"/,
      /CIDR of its own/,
    ],
    [
      { node_slice_size: '/20' },
      /^ipam\.node_slice_size \/20 does not fit range \/24 \(IPv4\)$/,
      /no shorter than the range's/,
    ],
    [{ network_name: 'Blue' }, /^ipam\.network_name "Blue" must be lowercase letters/, /at most 63 characters/],
  ];
  for (const [extra, message, fix] of cases) {
    const [finding] = judged(judgeNad(nad('a', wb(extra)))).findings;
    assert.match(finding?.message ?? '', message);
    assert.match(finding?.fix ?? '', fix);
    assert.equal(finding?.admission, true, finding?.message);
  }
});

test('judgeNad() refuses an etcd datastore (hereabouts has none), not flagged for the admission policy', () => {
  const [finding] = judged(judgeNad(nad('a', wb({ datastore: 'etcd', etcd_host: 'https://etcd:2379' })))).findings;
  assert.ok(finding !== undefined);
  assert.equal(finding.message, 'ipam.datastore "etcd" is not "kubernetes" or "local"');
  assert.match(finding.fix ?? '', /"datastore": "kubernetes"/);
  assert.equal(finding.admission, undefined);
});

test('judgeNad() reports a range_start outside the usable addresses as ignored (as Whereabouts does), and as refused by the admission policy on write', () => {
  const j = judged(judgeNad(nad('a', wb({ range_start: '10.2.0.1' }))));
  assert.equal(j.verdict, 'differs');
  assert.deepEqual(j.findings, [
    {
      kind: 'ignored',
      message: 'ipam.range_start 10.2.0.1 is outside the usable addresses of 10.1.0.0/24; ignored, as Whereabouts does',
      admission: true,
    },
  ]);
});

test("judgeNad() judges each hereabouts plugin of a conflist with the list's name, and says which plugin", () => {
  const list = {
    cniVersion: '1.0.0',
    name: 'chain',
    plugins: [{ type: 'macvlan', ipam: { type: 'hereabouts', range: '10.1.0.0' } }, { type: 'tuning' }],
  };
  const j = judged(judgeNad(nad('a', list)));
  assert.deepEqual(
    j.findings.map((f) => [f.plugin, f.message]),
    [['plugins[0]', 'ipam.range: range "10.1.0.0": missing /prefix length']],
  );
});

test('judgeNad() notes a configuration_path (read on the node, unseen here) without refusing the NAD', () => {
  const j = judged(judgeNad(nad('a', wb({ configuration_path: '/etc/cni/net.d/whereabouts.d/whereabouts.conf' }))));
  assert.equal(j.verdict, 'same');
  assert.deepEqual(
    j.findings.map((f) => f.kind),
    ['note'],
  );
});

test('judgeNad() refuses a config that is not JSON when it names whereabouts, and leaves other NADs out', () => {
  const broken = judged(judgeNad(nad('a', '{"type": "macvlan", "ipam": {"type": "whereabouts",}')));
  assert.equal(broken.verdict, 'refuses');
  assert.match(broken.findings[0]?.message ?? '', /^spec\.config is not JSON \(/);
  assert.equal(judgeNad(nad('b', '{not json')).kind, 'other');
  assert.equal(judgeNad(nad('c', conf({ type: 'host-local', subnet: '10.0.0.0/24' }))).kind, 'other');
  assert.deepEqual(judgeNad({ metadata: { namespace: 'ns', name: 'd' }, spec: {} }), {
    kind: 'no-config',
    namespace: 'ns',
    name: 'd',
  });
});

test('preflightReport() sorts the NADs, counts the verdicts, lists those without config; the table says it all', () => {
  const report = preflightReport(
    [
      nad('z-bad', wb({ range: 'x' }), 'b'),
      nad('good', wb(), 'a'),
      nad('log', wb({ log_file: '/tmp/w.log' }), 'a'),
      nad('host-local', conf({ type: 'host-local' }), 'a'),
      { metadata: { namespace: 'a', name: 'file' }, spec: {} },
    ],
    undefined,
  );
  assert.deepEqual(
    report.nads.map((n) => `${n.namespace}/${n.name} ${n.verdict}`),
    ['a/good same', 'a/log differs', 'b/z-bad refuses'],
  );
  assert.deepEqual(report.counts, { same: 1, differs: 1, refuses: 1 });
  assert.deepEqual(report.unchecked, ['a/file']);
  const lines = formatPreflight(report).split('\n');
  assert.equal(
    lines[0],
    '3 NetworkAttachmentDefinition(s) with hereabouts/whereabouts IPAM in all namespaces: 1 served as Whereabouts did, 1 with differences, 1 refused',
  );
  assert.match(lines[1] ?? '', /^NAD\s+VERDICT\s+DETAILS$/);
  assert.match(lines[2] ?? '', /^a\/good\s+same\s+served as Whereabouts did$/);
  assert.match(lines[3] ?? '', /^a\/log\s+differs\s+ignored: ipam\.log_file "\/tmp\/w\.log" is outside/);
  assert.match(
    lines[4] ?? '',
    /^b\/z-bad\s+refuses\s+refused: ipam\.range: range "x": missing \/prefix length; fix: write the range as a CIDR .* \[refused by the admission policy when written\]$/,
  );
  assert.equal(lines[5], "not checked (no spec.config: Multus reads the node's file): a/file");
});
