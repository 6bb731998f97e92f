// `hereabouts ip` and `hereabouts pool` (the packaged executable) on pools, reservations, node slices and pods
// created through a real API server; the command line's exit codes and messages.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { controlPlane, createNamespace, kubeconfigFor, type Namespace } from '../../support/control-plane.ts';
import { ago, createPod, deleteAllPods } from '../controller/harness.ts';
import { entry, hb, json, pool, reservation, sliceOwner } from './harness.ts';

interface Holder {
  network: string | null;
  pool: string;
  sliceOf?: string;
  podRef: string;
  podUid?: string;
  containerId: string;
  ifname: string;
  node?: string;
  pod: { state: string; uid?: string; node?: string };
  since?: string;
  reservation: { name: string | null; state: string; podRef?: string };
}
interface IpReport {
  address: string;
  holders: Holder[];
  reservations: Array<{ name: string; podRef: string }>;
}

describe('hereabouts ip and pool', () => {
  let ns: Namespace;
  let webUid: string;
  const allocatedAt = ago(10 * 60_000);
  before(async () => {
    ns = await createNamespace(await controlPlane(), 'ops-ip');
    webUid = await createPod(ns, 'web', { phase: 'Running', container: 'running', node: 'node-a' });
    const web = entry(ns, 'web', { podUid: webUid, node: 'node-a', createdAt: allocatedAt });
    // One address in two networks: the unnamed one (reservation agrees) and "blue" (its reservation names another pod).
    await pool(ns, '10.60.0.0-24', '10.60.0.0/24', { '5': web });
    await reservation(ns, '10.60.0.5', web);
    await pool(ns, 'blue-10.60.0.0-24', '10.60.0.0/24', { '5': entry(ns, 'gone') });
    await reservation(ns, 'blue-10.60.0.5', entry(ns, 'someone-else'));
    // A reservation whose address no pool holds.
    await reservation(ns, '10.60.0.78', entry(ns, 'stray'));
    // Node-a's slice of network "slicenet" (no network_name: unprefixed pool names).
    await sliceOwner(ns, 'slicenet', '10.70.0.0/24', '/28', [{ nodeName: 'node-a', sliceRange: '10.70.0.0/28' }]);
    await pool(ns, 'node-a-10.70.0.0-28', '10.70.0.0/28', { '2': web });
    await pool(ns, 'fd00---64', 'fd00::/64', { '18446744073709551614': web });
  });
  after(async () => {
    await deleteAllPods(ns);
    await ns.cleanup();
  });

  test('ip -o json: every pool holding the address, its pod, node, container, since when, and the reservation', () => {
    const report = json(hb(ns, ['ip', '10.60.0.5', '-o', 'json'])) as IpReport;
    assert.equal(report.address, '10.60.0.5');
    assert.deepEqual(report.holders, [
      {
        network: '',
        pool: '10.60.0.0-24',
        podRef: `${ns.name}/web`,
        podUid: webUid,
        containerId: 'ctr-web',
        ifname: 'net1',
        node: 'node-a',
        pod: { state: 'Running', uid: webUid, node: 'node-a' },
        since: allocatedAt,
        reservation: { name: '10.60.0.5', state: 'agrees', podRef: `${ns.name}/web` },
      },
      {
        network: 'blue',
        pool: 'blue-10.60.0.0-24',
        podRef: `${ns.name}/gone`,
        containerId: 'ctr-gone',
        ifname: 'net1',
        pod: { state: 'gone' },
        reservation: { name: 'blue-10.60.0.5', state: 'other-attachment', podRef: `${ns.name}/someone-else` },
      },
    ]);
    assert.deepEqual(report.reservations, []);
  });

  test('ip --network picks one network', () => {
    const blue = json(hb(ns, ['ip', '10.60.0.5', '--network', 'blue', '-o', 'json'])) as IpReport;
    assert.deepEqual(
      blue.holders.map((h) => h.pool),
      ['blue-10.60.0.0-24'],
    );
    const unnamed = json(hb(ns, ['ip', '10.60.0.5', '--network', '', '-o', 'json'])) as IpReport;
    assert.deepEqual(
      unnamed.holders.map((h) => h.pool),
      ['10.60.0.0-24'],
    );
  });

  test('ip prints each holder as a block, and says when pool and reservation disagree', () => {
    const run = hb(ns, ['ip', '10.60.0.5']);
    assert.equal(run.code, 0, run.stderr);
    const lines = run.stdout.split('\n');
    assert.equal(lines[0], `10.60.0.5 is held by ${ns.name}/web in IPPool 10.60.0.0-24`);
    assert.ok(lines.includes('  network      (unnamed)'), run.stdout);
    assert.ok(lines.includes(`  pod          Running, uid ${webUid}, on node-a`), run.stdout);
    assert.ok(lines.includes('  container    ctr-web, interface net1'), run.stdout);
    assert.ok(lines.includes(`  since        ${allocatedAt} (10m ago)`), run.stdout);
    assert.ok(lines.includes('  reservation  10.60.0.5: agrees with the pool'), run.stdout);
    assert.ok(
      lines.includes(`  reservation  blue-10.60.0.5: DISAGREES: names another attachment (${ns.name}/someone-else)`),
      run.stdout,
    );
  });

  test('a node-slice pool names its node; an IPv6 address at offset 2^64 - 2 is found', () => {
    const slice = json(hb(ns, ['ip', '10.70.0.2', '-o', 'json'])) as IpReport;
    assert.equal(slice.holders[0]?.sliceOf, 'node-a');
    assert.equal(slice.holders[0].network, '');
    const v6 = json(hb(ns, ['ip', 'fd00:0::ffff:ffff:ffff:fffe', '-o', 'json'])) as IpReport;
    assert.equal(v6.address, 'fd00::ffff:ffff:ffff:fffe');
    assert.deepEqual(
      v6.holders.map((h) => [h.pool, h.podRef]),
      [['fd00---64', `${ns.name}/web`]],
    );
  });

  test('an address no pool holds: exit 1, it says so, and shows a reservation left for it', () => {
    const free = hb(ns, ['ip', '10.60.0.77']);
    assert.equal(free.code, 1);
    assert.equal(free.stdout, `10.60.0.77 is not allocated in any IPPool in namespace ${ns.name}\n`);
    const stray = hb(ns, ['ip', '10.60.0.78', '-o', 'json']);
    const report = json(stray, 1) as IpReport;
    assert.deepEqual(report.holders, []);
    assert.deepEqual(
      report.reservations.map((r) => [r.name, r.podRef]),
      [['10.60.0.78', `${ns.name}/stray`]],
    );
  });

  test("pool -o json: every allocation with pod, node, age, reservation state and the controller's verdict", () => {
    const report = json(hb(ns, ['pool', '10.60.0.0-24', '-o', 'json'])) as {
      name: string;
      range: string;
      network: string;
      capacity: number;
      used: number;
      free: number;
      allocations: Array<Record<string, unknown>>;
    };
    assert.deepEqual(
      [report.name, report.range, report.network, report.capacity, report.used, report.free],
      ['10.60.0.0-24', '10.60.0.0/24', '', 254, 1, 253],
    );
    const row = report.allocations[0]!;
    assert.equal(row['address'], '10.60.0.5');
    assert.equal(row['podRef'], `${ns.name}/web`);
    assert.equal(row['node'], 'node-a');
    assert.equal(row['since'], allocatedAt);
    assert.ok(
      typeof row['ageSeconds'] === 'number' && row['ageSeconds'] >= 600 && row['ageSeconds'] < 700,
      String(row['ageSeconds']),
    );
    assert.deepEqual(row['reservation'], { name: '10.60.0.5', state: 'agrees' });
    assert.equal(row['orphan'], undefined, 'a running pod keeps its address');
    const blue = json(hb(ns, ['pool', 'blue-10.60.0.0-24', '-o', 'json'])) as {
      allocations: Array<Record<string, unknown>>;
    };
    assert.deepEqual(blue.allocations[0]?.['orphan'], { reason: 'pod-gone' });
    assert.deepEqual(blue.allocations[0]['pod'], { state: 'gone' });
  });

  test('pool prints a table; a node-slice pool names its node; an IPv6 /64 counts exactly', () => {
    const run = hb(ns, ['pool', 'node-a-10.70.0.0-28']);
    assert.equal(run.code, 0, run.stderr);
    const lines = run.stdout.split('\n');
    assert.equal(
      lines[0],
      'IPPool node-a-10.70.0.0-28: range 10.70.0.0/28, network (unnamed), node slice of node-a; 1 used of 14, 13 free',
    );
    assert.match(
      lines[1] ?? '',
      /^ADDRESS\s+POD\s+POD STATE\s+NODE\s+AGE\s+CONTAINER\s+IFNAME\s+RESERVATION\s+ORPHAN$/,
    );
    assert.match(
      lines[2] ?? '',
      new RegExp(`^10\\.70\\.0\\.2\\s+${ns.name}/web\\s+Running\\s+node-a\\s+10m\\s+ctr-web\\s+net1\\s+missing\\s+-$`),
    );
    const v6 = json(hb(ns, ['pool', 'fd00---64', '-o', 'json'])) as { capacity: unknown; used: unknown; free: unknown };
    assert.deepEqual([v6.capacity, v6.used, v6.free], ['18446744073709551614', 1, '18446744073709551613']);
  });

  test('pool: no such pool is exit 1', () => {
    const run = hb(ns, ['pool', 'nope']);
    assert.equal(run.code, 1);
    assert.match(run.stderr, new RegExp(`no IPPool "nope" in namespace ${ns.name}`));
  });

  test('usage errors are exit 2 and name the argument or flag', () => {
    for (const [args, message] of [
      [['ip', '10.60.0.300'], /<address> "10\.60\.0\.300" is not an IPv4 or IPv6 address/],
      [['ip'], /^hereabouts ip: <address> is missing \(see hereabouts ip --help\)$/],
      [['ip', '10.0.0.1', '--bogus'], /^hereabouts ip: unknown flag --bogus \(see hereabouts ip --help\)$/],
      [['pool', 'a', 'b'], /^hereabouts pool: takes only <name>, also got "b"/],
      [['orphans', '-o', 'yaml'], /-o "yaml" must be table or json/],
      [['check', '--pending-grace', 'soon'], /--pending-grace "soon" is not a duration/],
      [['release', '10.0.0.1'], /--network is required/],
      [['status', '--bogus'], /^hereabouts status: unknown flag --bogus \(see hereabouts status --help\)$/],
    ] as const) {
      const run = hb(ns, args);
      assert.equal(run.code, 2, `${args.join(' ')}: ${run.stderr}`);
      assert.match(run.stderr.trimEnd(), message);
      assert.equal(run.stderr.trimEnd().split('\n').length, 1, `one line: ${run.stderr}`);
      assert.doesNotMatch(run.stderr, /kubernetes\.kubeconfig|ipam\./, 'no CNI configuration key');
    }
  });

  test('--context picks another context of the kubeconfig; an unknown one is exit 2', () => {
    const file = join(ns.dir, 'two-contexts');
    // The current context points at "default"; the one named "pools" at the test namespace.
    const withSecond = kubeconfigFor(ns.cp, 'default').replace(
      'contexts:\n',
      `contexts:\n  - name: pools\n    context:\n      cluster: test\n      user: test\n      namespace: ${ns.name}\n`,
    );
    writeFileSync(file, withSecond, { mode: 0o600 });
    const report = json(hb(undefined, ['status', '--kubeconfig', file, '--context', 'pools', '-o', 'json'])) as {
      namespace: string;
      pools: unknown[];
    };
    assert.equal(report.namespace, ns.name);
    assert.equal(report.pools.length, 4);
    const bad = hb(undefined, ['ip', '10.60.0.5', '--kubeconfig', file, '--context', 'nope']);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--context: --kubeconfig .* has no context "nope" \(it has "pools", "test"\)/);
  });

  test('a kubeconfig that cannot be read is exit 1, named by the flag or variable that led to it', () => {
    const flag = hb(undefined, ['ip', '10.60.0.5', '--kubeconfig', '/nonexistent/kubeconfig']);
    assert.equal(flag.code, 1);
    assert.match(flag.stderr, /^hereabouts ip: --kubeconfig "\/nonexistent\/kubeconfig" does not exist/);
    const variable = hb(undefined, ['check'], { KUBECONFIG: '/nonexistent/kc' });
    assert.equal(variable.code, 1);
    assert.match(variable.stderr, /\$KUBECONFIG "\/nonexistent\/kc" does not exist/);
    const home = hb(undefined, ['orphans'], { HOME: ns.dir });
    assert.equal(home.code, 1);
    assert.match(
      home.stderr,
      /no kubeconfig: no --kubeconfig, no \$KUBECONFIG, no .*\/\.kube\/config, and not in a cluster/,
    );
    for (const run of [flag, variable, home]) assert.doesNotMatch(run.stderr, /kubernetes\.kubeconfig/);
  });

  test('without --kubeconfig or $KUBECONFIG, ~/.kube/config is used', () => {
    const home = join(ns.dir, 'operator-home');
    mkdirSync(join(home, '.kube'), { recursive: true });
    copyFileSync(ns.kubeconfig, join(home, '.kube', 'config'));
    const report = json(hb(undefined, ['ip', '10.60.0.5', '-o', 'json'], { HOME: home })) as IpReport;
    assert.equal(report.holders.length, 2);
  });

  test('--help of each command, and the top-level usage lists them', () => {
    for (const command of ['status', 'ip', 'pool', 'orphans', 'release', 'check', 'preflight']) {
      const run = hb(undefined, [command, '--help']);
      assert.equal(run.code, 0, run.stderr);
      assert.match(run.stdout, new RegExp(`^Usage: hereabouts ${command}`));
      assert.match(run.stdout, /--context NAME/);
    }
    const top = hb(undefined, ['--help']);
    for (const command of [
      'status',
      'ip ADDRESS',
      'pool NAME',
      'orphans',
      'release ADDRESS --network NAME',
      'check',
      'preflight',
    ]) {
      assert.match(top.stdout, new RegExp(`^  hereabouts ${command}\\b`, 'm'), command);
    }
  });
});
