// Claim records (DESIGN §12) in the operator commands, against the real API server with Cluster API's CRDs
// (installed by scripts/control-plane/start.sh): an IPPool that holds addresses for IPAddressClaims (one whose claim
// exists, with its IPAddress and Cluster, one whose claim is gone) and the IPPool of a claims pool that holds a
// PrefixClaim's block, written directly as the controller writes them (no controller runs here). `status` counts
// them, `pool` and `ip` name their claims, `check` finds the record of the claim that is gone and takes none of them
// for a pod's orphan, `orphans` lists none, and `release` leaves a claim's address alone while the claim exists.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { api, apiRequest, controlPlane, createNamespace, type Namespace } from '../../support/control-plane.ts';
import { allocationsOf, hb, json, pool, reservation, type Entry } from './harness.ts';

const CAPI = '/apis/ipam.cluster.x-k8s.io/v1beta2';
const HB = '/apis/hereabouts.cni.cncf.io/v1alpha1';
const old = new Date(Date.now() - 3_600_000).toISOString().replace(/\.\d{3}Z$/, 'Z');

interface StatusPool {
  name: string;
  used: number;
  warm: number;
  claims: number;
  prefixes: number;
  free: number;
  orphans: number | null;
}
interface Problem {
  kind: string;
  address?: string;
  claim?: string;
  message: string;
}

describe('claim records in status, pool, ip, check, orphans and release', () => {
  let ns: Namespace;
  let own: string;
  const path = (group: string, plural: string, name?: string) =>
    `${group}/namespaces/${ns.name}/${plural}${name === undefined ? '' : `/${name}`}`;
  const machine = (name: string): Entry => ({
    id: `hereabouts-claim:${ns.name}/${name}`,
    podref: '',
    ifname: 'claim',
    createdAt: old,
  });

  before(async () => {
    ns = await createNamespace(await controlPlane(), 'ops-claims');
    own = `hereabouts-claims.ns.${ns.name}.blocks-10.121.0.0-24`;
    // A network's pool: a pod's address beside two machines' (m-0's claim exists, m-gone's does not).
    await pool(ns, '10.120.0.0-24', '10.120.0.0/24', {
      '10': machine('m-0'),
      '11': machine('m-gone'),
    });
    await reservation(ns, '10.120.0.10', machine('m-0'));
    await reservation(ns, '10.120.0.11', machine('m-gone'));
    // A claims pool's own IPPool: a PrefixClaim's /26 (no reservation: a block is never reserved).
    await pool(ns, own, '10.121.0.0/24', {
      '64': { id: `hereabouts-prefix:26:${ns.name}/p-0`, podref: '', ifname: 'claim', createdAt: old },
    });
    await api(ns.cp, 'POST', path(CAPI, 'ipaddressclaims'), {
      apiVersion: 'ipam.cluster.x-k8s.io/v1beta2',
      kind: 'IPAddressClaim',
      metadata: { name: 'm-0', labels: { 'cluster.x-k8s.io/cluster-name': 'from-label' } },
      spec: {
        clusterName: 'c1',
        poolRef: { apiGroup: 'hereabouts.cni.cncf.io', kind: 'AddressPool', name: 'machines' },
      },
    });
    await api(ns.cp, 'POST', path(CAPI, 'ipaddresses'), {
      apiVersion: 'ipam.cluster.x-k8s.io/v1beta2',
      kind: 'IPAddress',
      metadata: { name: 'm-0' },
      spec: {
        address: '10.120.0.10',
        prefix: 24,
        gateway: '10.120.0.1',
        claimRef: { name: 'm-0' },
        poolRef: { apiGroup: 'hereabouts.cni.cncf.io', kind: 'AddressPool', name: 'machines' },
      },
    });
    await api(ns.cp, 'POST', path(HB, 'prefixclaims'), {
      apiVersion: 'hereabouts.cni.cncf.io/v1alpha1',
      kind: 'PrefixClaim',
      metadata: { name: 'p-0' },
      spec: { poolRef: { kind: 'AddressPool', name: 'blocks' }, prefixLength: 26 },
    });
  });
  after(async () => {
    for (const [group, plural] of [
      [CAPI, 'ipaddressclaims'],
      [CAPI, 'ipaddresses'],
      [HB, 'prefixclaims'],
    ] as const)
      await apiRequest(ns.cp, 'DELETE', path(group, plural));
    await ns.cleanup();
  });

  test('status counts the addresses IPAddressClaims hold and the PrefixClaims, and no orphans', () => {
    const report = json(hb(ns, ['status', '-o', 'json'])) as { pools: StatusPool[] };
    const row = (name: string) => report.pools.find((p) => p.name === name);
    assert.deepEqual(
      [row('10.120.0.0-24'), row(own)].map((p) => [p?.used, p?.warm, p?.claims, p?.prefixes, p?.free, p?.orphans]),
      [
        [2, 0, 2, 0, 252, 0],
        [1, 0, 0, 1, 253, 0],
      ],
    );
    const table = hb(ns, ['status']);
    assert.equal(table.code, 0, table.stderr);
    const lines = table.stdout.split('\n');
    assert.match(
      lines[1] ?? '',
      /^POOL\s+RANGE\s+CAPACITY\s+USED\s+WARM\s+CLAIMS\s+PREFIXES\s+STICKY\s+FREE\s+ORPHANS\s+NODE$/,
    );
    assert.match(lines.find((l) => l.startsWith('10.120.0.0-24 ')) ?? '', /\s254\s+2\s+0\s+2\s+0\s+0\s+252\s+0\s+-$/);
    assert.match(lines.find((l) => l.startsWith(`${own} `)) ?? '', /\s254\s+1\s+0\s+0\s+1\s+0\s+253\s+0\s+-$/);
  });

  test('pool names the claim of each claim record, a PrefixClaim with its block, and whether the claim exists', () => {
    const shared = hb(ns, ['pool', '10.120.0.0-24']);
    assert.equal(shared.code, 0, shared.stderr);
    const lines = shared.stdout.split('\n');
    assert.match(lines[0] ?? '', /; 2 used of 254 \(2 by IPAddressClaims\), 252 free$/);
    assert.match(
      lines[2] ?? '',
      new RegExp(
        `^10\\.120\\.0\\.10\\s+IPAddressClaim ${ns.name}/m-0\\s+claim present\\s+-\\s+1h\\s+\\S+\\s+claim\\s+agrees\\s+-$`,
      ),
    );
    assert.match(lines[3] ?? '', new RegExp(`^10\\.120\\.0\\.11\\s+IPAddressClaim ${ns.name}/m-gone\\s+claim gone\\s`));
    const blocks = hb(ns, ['pool', own]);
    assert.equal(blocks.code, 0, blocks.stderr);
    assert.match(
      blocks.stdout,
      new RegExp(
        `\\n10\\.121\\.0\\.64\\s+PrefixClaim ${ns.name}/p-0 10\\.121\\.0\\.64/26\\s+claim present\\s.*\\snone\\s+-\\n`,
      ),
    );
    const report = json(hb(ns, ['pool', own, '-o', 'json'])) as {
      prefixes: number;
      allocations: Array<{ claim?: unknown }>;
    };
    assert.equal(report.prefixes, 1);
    assert.deepEqual(report.allocations[0]?.claim, {
      kind: 'PrefixClaim',
      namespace: ns.name,
      name: 'p-0',
      block: '10.121.0.64/26',
      state: 'present',
    });
  });

  test('ip names the IPAddressClaim, its Cluster and its IPAddress; inside a block, the PrefixClaim and the block', () => {
    const machineIp = hb(ns, ['ip', '10.120.0.10']);
    assert.equal(machineIp.code, 0, machineIp.stderr);
    assert.equal(
      machineIp.stdout.split('\n').slice(0, 5).join('\n'),
      [
        `10.120.0.10 is held by IPAddressClaim ${ns.name}/m-0 in IPPool 10.120.0.0-24`,
        '  network      (unnamed)',
        `  claim        IPAddressClaim ${ns.name}/m-0: exists`,
        '  cluster      c1',
        `  ipaddress    ${ns.name}/m-0: 10.120.0.10/24, gateway 10.120.0.1`,
      ].join('\n'),
    );
    assert.match(machineIp.stdout, /\n {2}reservation {2}10\.120\.0\.10: agrees with the pool\n$/);

    const inBlock = hb(ns, ['ip', '10.121.0.100']);
    assert.equal(inBlock.code, 0, inBlock.stderr);
    assert.match(
      inBlock.stdout,
      new RegExp(
        `^10\\.121\\.0\\.100 is held by PrefixClaim ${ns.name}/p-0 \\(block 10\\.121\\.0\\.64/26\\) in IPPool ${own.replace(/\./g, '\\.')}\\n`,
      ),
    );
    assert.match(inBlock.stdout, /\n {2}block {8}10\.121\.0\.64\/26, recorded at 10\.121\.0\.64\n/);
    assert.equal(hb(ns, ['ip', '10.121.0.128']).code, 1, 'past the block, the address is free');

    const gone = json(hb(ns, ['ip', '10.120.0.11', '-o', 'json'])) as {
      holders: Array<{ claim?: { state: string; ipAddress?: unknown } }>;
    };
    assert.equal(gone.holders[0]?.claim?.state, 'gone');
    assert.equal(gone.holders[0].claim.ipAddress, null);
    assert.match(
      hb(ns, ['ip', '10.120.0.11']).stdout,
      new RegExp(
        `claim {8}IPAddressClaim ${ns.name}/m-gone: GONE: the controller's record pass releases the address\\n`,
      ),
    );
  });

  test('check: the record of the claim that is gone is a problem; no claim record is a pod orphan', () => {
    const report = json(hb(ns, ['check', '--reservation-grace', '0s', '-o', 'json']), 1) as { problems: Problem[] };
    assert.deepEqual(
      report.problems.map((p) => [p.kind, p.address, p.claim]),
      [['claim-gone', '10.120.0.11', `IPAddressClaim ${ns.name}/m-gone`]],
    );
    const orphans = json(hb(ns, ['orphans', '--reservation-grace', '0s', '-o', 'json'])) as {
      allocations: unknown[];
      waiting: unknown[];
      reservations: unknown[];
    };
    assert.deepEqual([orphans.allocations, orphans.waiting, orphans.reservations], [[], [], []]);
  });

  test("release refuses a claim's address while the claim exists and an address inside a block; frees a gone claim's", async () => {
    const refused = hb(ns, ['release', '10.120.0.10', '--network', '']);
    assert.equal(refused.code, 1, refused.stderr);
    assert.equal(
      refused.stdout,
      `refused to release 10.120.0.10 of network (unnamed): IPAddressClaim ${ns.name}/m-0 holds it: delete the claim to release its address: --force releases it anyway\n`,
    );
    const network = own.slice(0, -'-10.121.0.0-24'.length);
    const inBlock = hb(ns, ['release', '10.121.0.70', '--network', network, '--force']);
    assert.equal(inBlock.code, 1, inBlock.stderr);
    assert.match(
      inBlock.stdout,
      /lies in the block 10\.121\.0\.64\/26 of PrefixClaim .*\/p-0 .*: a block is released whole/,
    );
    assert.deepEqual(Object.keys(await allocationsOf(ns, own)), ['64']);
    assert.deepEqual(Object.keys(await allocationsOf(ns, '10.120.0.0-24')).sort(), ['10', '11']);

    const released = hb(ns, ['release', '10.120.0.11', '--network', '']);
    assert.equal(released.code, 0, released.stdout + released.stderr);
    assert.match(
      released.stdout,
      /^released 10\.120\.0\.11 from IPPool 10\.120\.0\.0-24 .*\nreservation 10\.120\.0\.11: deleted\n$/,
    );
    const clean = hb(ns, ['check', '--reservation-grace', '0s']);
    assert.equal(clean.code, 0, clean.stdout);
  });
});
