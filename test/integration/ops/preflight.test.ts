// `hereabouts preflight` (the built executable) against a real API server holding good, ignorable and refusable
// NetworkAttachmentDefinitions: each judged as the plugin would judge it, exit 1 while one would be refused, 0 after.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { api, controlPlane, createNamespace, kubeconfigFor, type Namespace } from '../../support/control-plane.ts';
import { hb, json } from './harness.ts';

interface Finding {
  kind: string;
  message: string;
  fix?: string;
  plugin?: string;
  admission?: boolean;
}
interface Report {
  namespace?: string;
  nads: Array<{ namespace: string; name: string; verdict: string; findings: Finding[] }>;
  unchecked: string[];
  counts: { same: number; differs: number; refuses: number };
}

const NADS = (ns: string): string => `/apis/k8s.cni.cncf.io/v1/namespaces/${ns}/network-attachment-definitions`;
const wb = (ipam: Record<string, unknown>) =>
  JSON.stringify({
    cniVersion: '0.3.1',
    name: 'net',
    type: 'macvlan',
    master: 'eth0',
    ipam: { type: 'whereabouts', ...ipam },
  });

async function nad(ns: string, name: string, config: string | undefined, cp: Namespace['cp']): Promise<void> {
  await api(cp, 'POST', NADS(ns), {
    apiVersion: 'k8s.cni.cncf.io/v1',
    kind: 'NetworkAttachmentDefinition',
    metadata: { name },
    spec: config === undefined ? {} : { config },
  });
}

describe('hereabouts preflight', () => {
  let ns: Namespace;
  let other: Namespace;
  before(async () => {
    const cp = await controlPlane();
    ns = await createNamespace(cp, 'preflight');
    other = await createNamespace(cp, 'preflight-other');
    await nad(
      ns.name,
      'good',
      wb({ range: '10.61.0.0/24', kubernetes: { kubeconfig: '/etc/cni/net.d/whereabouts.d/whereabouts.kubeconfig' } }),
      cp,
    );
    await nad(
      ns.name,
      'logs-to-tmp',
      wb({ range: '10.62.0.0/24', log_file: '/tmp/whereabouts.log', log_level: 'debug', sleep_for_race: 1 }),
      cp,
    );
    await nad(ns.name, 'bad-prefix', wb({ range: '10.63.0.0/33' }), cp);
    const chain = {
      cniVersion: '1.0.0',
      name: 'chain',
      plugins: [
        { type: 'macvlan', ipam: { type: 'hereabouts', range: '10.64.0.0/24', ipRanges: [{ range: '10.64.0.0/25' }] } },
        { type: 'tuning' },
      ],
    };
    await nad(ns.name, 'overlapping-chain', JSON.stringify(chain), cp);
    await nad(
      ns.name,
      'host-local',
      JSON.stringify({
        cniVersion: '1.0.0',
        name: 'h',
        type: 'bridge',
        ipam: { type: 'host-local', subnet: '10.65.0.0/24' },
      }),
      cp,
    );
    await nad(ns.name, 'from-file', undefined, cp);
    await nad(other.name, 'elsewhere', wb({ range: '10.66.0.0/24' }), cp);
  });
  after(async () => {
    for (const n of [ns, other]) {
      await api(n.cp, 'DELETE', NADS(n.name));
      await n.cleanup();
    }
  });

  test('-o json: each NAD of the namespace judged (served as before, with differences, refused with a fix); exit 1', () => {
    const report = json(hb(ns, ['preflight', '-n', ns.name, '-o', 'json']), 1) as Report;
    assert.equal(report.namespace, ns.name);
    assert.deepEqual(
      report.nads.map((n) => `${n.name} ${n.verdict}`),
      ['bad-prefix refuses', 'good same', 'logs-to-tmp differs', 'overlapping-chain refuses'],
    );
    assert.deepEqual(report.counts, { same: 1, differs: 1, refuses: 2 });
    assert.deepEqual(report.unchecked, [`${ns.name}/from-file`]);
    const byName = new Map(report.nads.map((n) => [n.name, n.findings]));
    assert.deepEqual(byName.get('good'), []);
    assert.deepEqual(
      byName.get('logs-to-tmp')?.map((f) => [f.kind, f.message]),
      [
        [
          'ignored',
          'ipam.log_file "/tmp/whereabouts.log" is outside the directories the node\'s operator allows for it (/var/log): ignored; the plugin logs where the node\'s flat file says',
        ],
        ['ignored', 'ipam.sleep_for_race: accepted and ignored (hereabouts takes no cluster-wide lease)'],
      ],
    );
    assert.deepEqual(byName.get('bad-prefix'), [
      {
        kind: 'refused',
        message: 'ipam.range: range "10.63.0.0/33": prefix length "33" is not 0-32',
        fix: 'write the range as a CIDR ("10.0.0.0/24") or as A-B/len with A inside B/len ("10.0.0.10-10.0.0.50/24")',
        admission: true,
      },
    ]);
    const [overlap] = byName.get('overlapping-chain') ?? [];
    assert.ok(overlap !== undefined);
    assert.equal(overlap.plugin, 'plugins[0]');
    assert.equal(
      overlap.message,
      'ipam.ipRanges[0].range "10.64.0.0/25" overlaps ipam.range "10.64.0.0/24": one request takes one address per range, so ranges in one request must not overlap',
    );
  });

  test('the table: one summary line, then each NAD with its verdict and details', () => {
    const run = hb(ns, ['preflight', '-n', ns.name]);
    assert.equal(run.code, 1, run.stderr);
    const lines = run.stdout.split('\n');
    assert.equal(
      lines[0],
      `4 NetworkAttachmentDefinition(s) with hereabouts/whereabouts IPAM in namespace ${ns.name}: 1 served as Whereabouts did, 1 with differences, 2 refused`,
    );
    assert.match(lines[1] ?? '', /^NAD\s+VERDICT\s+DETAILS$/);
    assert.match(
      lines[2] ?? '',
      new RegExp(
        `^${ns.name}/bad-prefix\\s+refuses\\s+refused: ipam\\.range: range "10\\.63\\.0\\.0/33": prefix length "33" is not 0-32; fix: `,
      ),
    );
    assert.match(lines[3] ?? '', new RegExp(`^${ns.name}/good\\s+same\\s+served as Whereabouts did$`));
    assert.match(run.stdout, /not checked \(no spec\.config: Multus reads the node's file\): .*\/from-file/);
  });

  test("without -n: every namespace (the other namespace's NAD too)", () => {
    const run = hb(ns, ['preflight', '-o', 'json']);
    assert.equal(run.code, 1, run.stderr);
    const report = JSON.parse(run.stdout) as Report;
    assert.equal(report.namespace, undefined);
    const names = report.nads.map((n) => `${n.namespace}/${n.name}`);
    for (const name of [`${ns.name}/good`, `${ns.name}/bad-prefix`, `${other.name}/elsewhere`])
      assert.ok(names.includes(name), name);
  });

  test('exit 0 once no NAD would be refused', () => {
    const run = hb(other, ['preflight', '-n', other.name]);
    assert.equal(run.code, 0, run.stdout + run.stderr);
    assert.match(
      run.stdout,
      /^1 NetworkAttachmentDefinition\(s\) .*: 1 served as Whereabouts did, 0 with differences, 0 refused\n/,
    );
  });

  test('a wrong command line: exit 2 with one message naming the subcommand', () => {
    for (const args of [
      ['preflight', 'extra'],
      ['preflight', '-o', 'yaml'],
    ]) {
      const run = hb(ns, args);
      assert.equal(run.code, 2, run.stderr);
      assert.match(run.stderr, /^hereabouts preflight: /);
      assert.equal(run.stdout, '');
    }
    const help = hb(undefined, ['preflight', '--help']);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /-n, --namespace NS {2}only the NADs of this namespace; default: every namespace/);
  });

  test('a user who may not list NADs: exit 1 and the reason, no report', async () => {
    const base = `/api/v1/namespaces/${ns.name}`;
    await api(ns.cp, 'POST', `${base}/serviceaccounts`, {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name: 'nobody' },
    });
    const token = (await api(ns.cp, 'POST', `${base}/serviceaccounts/nobody/token`, {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: { expirationSeconds: 600 },
    })) as { status: { token: string } };
    const kubeconfig = join(ns.dir, 'nobody.kubeconfig');
    writeFileSync(kubeconfig, kubeconfigFor(ns.cp, ns.name, { token: token.status.token }), { mode: 0o600 });
    const run = hb(undefined, ['preflight', '--kubeconfig', kubeconfig]);
    assert.equal(run.code, 1);
    assert.equal(run.stdout, '');
    assert.match(
      run.stderr,
      /^hereabouts preflight: list \/apis\/k8s\.cni\.cncf\.io\/v1\/network-attachment-definitions: .*forbidden/i,
    );
  });
});
