// Claims beyond pods (DESIGN §12), against the real API server with Cluster API's own CRDs (installed from the
// sigs.k8s.io/cluster-api Go module by scripts/control-plane/start.sh) and the packaged `hereabouts controller`:
// IPAddressClaims on a pool of its own addresses and on a pool that shares a network with pods (the real plugin
// allocating beside the controller), prefix claims, pause, conditions and Events for every refusal, deletion with
// its finalizers, and a claim whose finalizer was removed by hand.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { api, apiRequest, controlPlane, createNamespace, type Namespace } from '../../support/control-plane.ts';
import { requireBinary } from '../../support/paths.ts';
import { freePort } from '../../support/free-port.ts';
import { runCni } from '../../support/cni.ts';
import { cniConf } from '../kubernetes/harness.ts';
import { createNad, eventually, events, startController, type Running } from './harness.ts';

const CAPI = '/apis/ipam.cluster.x-k8s.io/v1beta2';
const HB = '/apis/hereabouts.cni.cncf.io/v1alpha1';
type Obj = Record<string, unknown>;
const rec = (v: unknown): Obj => (typeof v === 'object' && v !== null ? (v as Obj) : {});

describe('Cluster API IPAddressClaims and PrefixClaims on hereabouts pools', () => {
  let ns: Namespace;
  let controller: Running;
  const path = (group: string, plural: string, name?: string) =>
    `${group}/namespaces/${ns.name}/${plural}${name === undefined ? '' : `/${name}`}`;
  const get = async (group: string, plural: string, name: string): Promise<Obj | undefined> => {
    const res = await apiRequest(ns.cp, 'GET', path(group, plural, name));
    return res.status === 404 ? undefined : rec(res.body);
  };
  const create = (group: string, plural: string, object: Obj) => api(ns.cp, 'POST', path(group, plural), object);
  const del = (group: string, plural: string, name: string) => api(ns.cp, 'DELETE', path(group, plural, name));

  const pool = (name: string, spec: Obj) =>
    create(HB, 'addresspools', {
      apiVersion: 'hereabouts.cni.cncf.io/v1alpha1',
      kind: 'AddressPool',
      metadata: { name },
      spec,
    });
  const claim = (name: string, poolName: string, extra: Obj = {}) =>
    create(CAPI, 'ipaddressclaims', {
      apiVersion: 'ipam.cluster.x-k8s.io/v1beta2',
      kind: 'IPAddressClaim',
      metadata: { name, ...rec(extra['metadata']) },
      spec: {
        poolRef: { apiGroup: 'hereabouts.cni.cncf.io', kind: 'AddressPool', name: poolName },
        ...rec(extra['spec']),
      },
    });
  const ready = (object: Obj | undefined): Obj | undefined =>
    (rec(object?.['status'])['conditions'] as Obj[] | undefined)?.find((c) => c['type'] === 'Ready');
  /** Waits for the claim's Ready condition to have `status` (and `reason`), and returns the claim. */
  const claimReady = async (name: string, status: string, reason?: string): Promise<Obj> => {
    let last: Obj | undefined;
    const ok = await eventually(async () => {
      last = await get(CAPI, 'ipaddressclaims', name);
      const c = ready(last);
      return c?.['status'] === status && (reason === undefined || c['reason'] === reason);
    }, 30_000);
    assert.ok(
      ok,
      `claim ${name} not Ready=${status} ${reason ?? ''}: ${JSON.stringify(last?.['status'])}\n${controller.log().slice(-3000)}`,
    );
    return last as Obj;
  };
  const addressOf = async (name: string): Promise<string | undefined> =>
    rec((await get(CAPI, 'ipaddresses', name))?.['spec'])['address'] as string | undefined;
  const ippool = async (name: string) =>
    rec(rec(await ns.get('ippools', name))['spec'])['allocations'] as Obj | undefined;

  let metricsUrl: string;
  before(async () => {
    ns = await createNamespace(await controlPlane(), 'claims');
    const port = await freePort();
    metricsUrl = `http://127.0.0.1:${port}/metrics`;
    controller = startController(
      ns,
      '--claims',
      ns.name,
      '--reconcile-interval',
      '2s',
      '--log-level',
      'debug',
      '--metrics-addr',
      `127.0.0.1:${port}`,
    );
    await controller.waitForLine((l) => l.msg.startsWith('leading:'), 30_000);
  });
  after(async () => {
    await controller.stop();
    for (const plural of ['ipaddressclaims', 'ipaddresses'])
      for (const item of (rec(await api(ns.cp, 'GET', path(CAPI, plural)))['items'] as Obj[] | undefined) ?? []) {
        const name = rec(item['metadata'])['name'] as string;
        await apiRequest(
          ns.cp,
          'PATCH',
          path(CAPI, plural, name),
          { metadata: { finalizers: null } },
          'application/merge-patch+json',
        );
        await apiRequest(ns.cp, 'DELETE', path(CAPI, plural, name));
      }
    for (const plural of ['addresspools', 'prefixclaims'])
      for (const item of (rec(await api(ns.cp, 'GET', path(HB, plural)))['items'] as Obj[] | undefined) ?? []) {
        const name = rec(item['metadata'])['name'] as string;
        await apiRequest(
          ns.cp,
          'PATCH',
          path(HB, plural, name),
          { metadata: { finalizers: null } },
          'application/merge-patch+json',
        );
        await apiRequest(ns.cp, 'DELETE', path(HB, plural, name));
      }
    await ns.cleanup();
  });

  test('claims on a pool of its own addresses: distinct IPAddresses owned by their claims, exhaustion, release', async () => {
    await pool('own', { addresses: ['10.70.0.10-10.70.0.12'], prefix: 24, gateway: '10.70.0.1' });
    for (const name of ['m-0', 'm-1', 'm-2']) await claim(name, 'own');
    const seen = new Set<string>();
    for (const name of ['m-0', 'm-1', 'm-2']) {
      const c = await claimReady(name, 'True', 'Ready');
      assert.deepEqual(rec(c['status'])['addressRef'], { name });
      assert.ok(rec(c['metadata'])['finalizers'] !== undefined);
      assert.deepEqual(rec(c['metadata'])['finalizers'], ['ipam.cluster.x-k8s.io/ReleaseAddress']);
      const address = await get(CAPI, 'ipaddresses', name);
      const spec = rec(address?.['spec']);
      assert.equal(spec['prefix'], 24);
      assert.equal(spec['gateway'], '10.70.0.1');
      assert.deepEqual(spec['claimRef'], { name });
      assert.deepEqual(spec['poolRef'], { apiGroup: 'hereabouts.cni.cncf.io', kind: 'AddressPool', name: 'own' });
      const meta = rec(address?.['metadata']);
      assert.deepEqual(meta['finalizers'], ['ipam.cluster.x-k8s.io/ProtectAddress']);
      const owner = (meta['ownerReferences'] as Obj[] | undefined)?.[0];
      assert.equal(owner?.['kind'], 'IPAddressClaim');
      assert.equal(owner['uid'], rec(c['metadata'])['uid']);
      seen.add(String(spec['address']));
    }
    assert.deepEqual([...seen].sort(), ['10.70.0.10', '10.70.0.11', '10.70.0.12']);
    // Recorded in the pool's own IPPool and reserved cluster-wide, by the claim's name.
    const ippoolName = `hereabouts-claims.ns.${ns.name}.3.own-10.70.0.0-24`;
    const allocations = await ippool(ippoolName);
    assert.deepEqual(Object.keys(allocations ?? {}).sort(), ['10', '11', '12']);
    assert.equal(rec(allocations?.['10'])['podref'], '');
    assert.match(String(rec(allocations?.['10'])['id']), new RegExp(`^hereabouts-claim:${ns.name}/m-[012]$`));
    const reserved = (await ns.list('overlappingrangeipreservations')).map((r) => rec(r['metadata'])['name']);
    for (const ip of seen)
      assert.ok(reserved.includes(`hereabouts-claims-${ip}`), `reservation of ${ip}: ${reserved.join(' ')}`);

    await claim('m-3', 'own');
    const exhausted = await claimReady('m-3', 'False', 'PoolExhausted');
    assert.match(String(ready(exhausted)?.['message']), /no free address in AddressPool own/);
    assert.ok((await events(ns)).some((e) => e.reason === 'PoolExhausted' && e.involvedObject.name === 'm-3'));

    // Deleting a claim gives its address back (its IPAddress goes, its reservation goes), and the waiting claim gets it.
    const freed = (await addressOf('m-1')) as string;
    await del(CAPI, 'ipaddressclaims', 'm-1');
    assert.ok(
      await eventually(async () => (await get(CAPI, 'ipaddressclaims', 'm-1')) === undefined, 30_000),
      controller.log().slice(-3000),
    );
    assert.equal(await get(CAPI, 'ipaddresses', 'm-1'), undefined);
    await claimReady('m-3', 'True', 'Ready');
    assert.equal(await addressOf('m-3'), freed);

    const status = await get(HB, 'addresspools', 'own');
    assert.ok(
      await eventually(async () => {
        const counts = rec(rec((await get(HB, 'addresspools', 'own'))?.['status'])['addresses']);
        return counts['total'] === 3 && counts['used'] === 3 && counts['free'] === 0;
      }, 20_000),
      JSON.stringify(status?.['status']),
    );
    assert.deepEqual(rec(status?.['metadata'])['finalizers'], ['hereabouts.cni.cncf.io/protect-pool']);
    // Metrics: the claims the caches hold, and how their reconciles ended.
    const metrics = await (await fetch(metricsUrl)).text();
    const value = (line: RegExp): number => Number(line.exec(metrics)?.[1] ?? NaN);
    assert.equal(value(/^hereabouts_claims\{kind="IPAddressClaim"\} (\d+)$/m), 3, metrics);
    assert.ok(value(/^hereabouts_claim_reconciles_total\{kind="claim",result="ready"\} (\d+)$/m) >= 4, metrics);
    assert.ok(value(/^hereabouts_claim_reconciles_total\{kind="claim",result="waiting"\} (\d+)$/m) >= 1, metrics);
    assert.ok(value(/^hereabouts_claim_reconciles_total\{kind="claim",result="released"\} (\d+)$/m) >= 1, metrics);
  });

  test('a pool that shares a network with pods: the plugin and the controller never hand out one address twice', async () => {
    const range = '10.71.0.0/28'; // 14 usable addresses
    await createNad(ns, 'shared', { type: 'hereabouts', range });
    await pool('shared', { network: { nad: { name: 'shared' } } });
    // Pods first (the real plugin, as kubelet runs it), then machines, then pods again: all distinct.
    const conf = cniConf(ns, 'worker-1', { name: 'shared', range });
    const add = async (id: string): Promise<string> => {
      const out = await runCni(
        requireBinary(),
        {
          command: 'ADD',
          containerId: id,
          netns: `/var/run/netns/${id}`,
          ifname: 'net1',
          path: '/opt/cni/bin',
          args: `K8S_POD_NAMESPACE=${ns.name};K8S_POD_NAME=${id}`,
        },
        conf,
        { extraEnv: { NODENAME: 'worker-1' } },
      );
      assert.equal(out.code, 0, out.stdout);
      return String((out.json?.['ips'] as Obj[])[0]?.['address']).split('/')[0] as string;
    };
    const holders = new Map<string, string>();
    const hold = (ip: string, who: string) => {
      assert.equal(holders.get(ip), undefined, `${ip} handed to ${who} and to ${holders.get(ip)}`);
      holders.set(ip, who);
    };
    for (let i = 0; i < 4; i++) hold(await add(`pod-a${i}`), `pod-a${i}`);
    for (let i = 0; i < 4; i++) await claim(`net-${i}`, 'shared');
    for (let i = 0; i < 4; i++) {
      await claimReady(`net-${i}`, 'True', 'Ready');
      hold((await addressOf(`net-${i}`)) as string, `claim net-${i}`);
      assert.equal(rec((await get(CAPI, 'ipaddresses', `net-${i}`))?.['spec'])['prefix'], 28);
    }
    for (let i = 0; i < 6; i++) hold(await add(`pod-b${i}`), `pod-b${i}`);
    // 14 usable: every one held once, by a pod or a machine, all in the one IPPool the pods use.
    assert.equal(holders.size, 14);
    const allocations = await ippool('10.71.0.0-28');
    assert.equal(Object.keys(allocations ?? {}).length, 14);
    await claim('net-full', 'shared');
    await claimReady('net-full', 'False', 'PoolExhausted');
    // Pool status counts pods and machines alike.
    assert.ok(
      await eventually(async () => {
        const counts = rec(rec((await get(HB, 'addresspools', 'shared'))?.['status'])['addresses']);
        return counts['used'] === 14 && counts['free'] === 0;
      }, 20_000),
    );
    // A machine's address freed goes to the next pod.
    const freed = (await addressOf('net-0')) as string;
    await del(CAPI, 'ipaddressclaims', 'net-full');
    await del(CAPI, 'ipaddressclaims', 'net-0');
    assert.ok(await eventually(async () => (await get(CAPI, 'ipaddressclaims', 'net-0')) === undefined, 30_000));
    assert.equal(await add('pod-c0'), freed);
  });

  test('bad input gets a condition and an Event, never a crash loop', async () => {
    await claim('no-pool', 'missing');
    const c1 = await claimReady('no-pool', 'False', 'PoolNotReady');
    assert.match(String(ready(c1)?.['message']), /AddressPool claims-[^/]+\/missing not found/);
    await pool('outside', { network: { nad: { name: 'shared' } }, addresses: ['10.99.0.1-10.99.0.5'] });
    await claim('bad-range', 'outside');
    const c2 = await claimReady('bad-range', 'False', 'PoolNotReady');
    assert.match(String(ready(c2)?.['message']), /spec.addresses 10.99.0.1-10.99.0.5 is outside the network's range/);
    await pool('bad-spec', { addresses: ['10.72.0.1', 'fd00::1'], prefix: 24 });
    await claim('bad-spec', 'bad-spec');
    const c3 = await claimReady('bad-spec', 'False', 'PoolNotReady');
    assert.match(String(ready(c3)?.['message']), /mixes IPv4 and IPv6/);
    // The Event follows the condition's write: waited for, not read at once.
    const wanted = ['no-pool:PoolNotReady', 'bad-range:PoolNotReady', 'bad-spec:PoolNotReady'];
    let reasons: string[] = [];
    const recorded = await eventually(async () => {
      reasons = (await events(ns))
        .filter((e) => e.type === 'Warning')
        .map((e) => `${e.involvedObject.name}:${e.reason}`);
      return wanted.every((r) => reasons.includes(r));
    }, 10_000);
    assert.ok(recorded, `${wanted.join(' ')} in ${reasons.join(' ')}`);
    // Fixing the pool serves the waiting claim.
    await api(
      ns.cp,
      'PATCH',
      path(HB, 'addresspools', 'bad-spec'),
      { spec: { addresses: ['10.72.0.1', '10.72.0.2'] } },
      'application/merge-patch+json',
    );
    await claimReady('bad-spec', 'True', 'Ready');
    assert.equal(await addressOf('bad-spec'), '10.72.0.1');
    assert.ok(!/uncaught|TypeError: Cannot/.test(controller.log()), 'no crash');
  });

  test('a paused claim is left alone until unpaused', async () => {
    await pool('pause', { addresses: ['10.73.0.5'], prefix: 24 });
    await claim('paused', 'pause', { metadata: { annotations: { 'cluster.x-k8s.io/paused': '' } } });
    // The pool's own reconcile comes after the claim's (both queued by the creates): wait for its status, then look.
    assert.ok(
      await eventually(
        async () => rec(rec((await get(HB, 'addresspools', 'pause'))?.['status'])['addresses'])['total'] === 1,
        20_000,
      ),
    );
    await controller.waitForLines((l) => l.msg === 'full pass done' || / pass done/.test(l.msg), 2, 20_000);
    assert.equal(await get(CAPI, 'ipaddresses', 'paused'), undefined);
    assert.equal(rec((await get(CAPI, 'ipaddressclaims', 'paused'))?.['metadata'])['finalizers'], undefined);
    await api(
      ns.cp,
      'PATCH',
      path(CAPI, 'ipaddressclaims', 'paused'),
      { metadata: { annotations: null } },
      'application/merge-patch+json',
    );
    await claimReady('paused', 'True', 'Ready');
    assert.equal(await addressOf('paused'), '10.73.0.5');
  });

  test('a claim whose finalizer was removed by hand: its record and IPAddress are released by the record pass', async () => {
    await pool('manual', { addresses: ['10.74.0.1-10.74.0.2'], prefix: 24 });
    await claim('manual', 'manual');
    await claimReady('manual', 'True', 'Ready');
    const ip = await addressOf('manual');
    await api(
      ns.cp,
      'PATCH',
      path(CAPI, 'ipaddressclaims', 'manual'),
      { metadata: { finalizers: null } },
      'application/merge-patch+json',
    );
    await del(CAPI, 'ipaddressclaims', 'manual');
    // The record stays through its grace (15 s from its write), then goes; the IPAddress loses its protection.
    const ippoolName = `hereabouts-claims.ns.${ns.name}.6.manual-10.74.0.0-24`;
    assert.ok(
      await eventually(async () => Object.keys((await ippool(ippoolName)) ?? {}).length === 0, 90_000),
      controller.log().slice(-3000),
    );
    assert.ok(await eventually(async () => (await get(CAPI, 'ipaddresses', 'manual')) === undefined, 30_000));
    await claim('manual-2', 'manual');
    await claimReady('manual-2', 'True', 'Ready');
    assert.equal(await addressOf('manual-2'), ip);
  });

  test('prefix claims: aligned blocks, exclusive with addresses and with each other; released on deletion', async () => {
    await pool('blocks', { addresses: ['10.75.0.0/24'], prefix: 16, allocateReservedIPAddresses: true });
    const prefix = (name: string, spec: Obj) =>
      create(HB, 'prefixclaims', {
        apiVersion: 'hereabouts.cni.cncf.io/v1alpha1',
        kind: 'PrefixClaim',
        metadata: { name },
        spec: { poolRef: { kind: 'AddressPool', name: 'blocks' }, ...spec },
      });
    const prefixReady = async (name: string, status: string): Promise<Obj> => {
      let last: Obj | undefined;
      assert.ok(
        await eventually(async () => {
          last = await get(HB, 'prefixclaims', name);
          return ready(last)?.['status'] === status;
        }, 30_000),
        `${name}: ${JSON.stringify(last?.['status'])}\n${controller.log().slice(-2000)}`,
      );
      return last as Obj;
    };
    await claim('first', 'blocks'); // takes 10.75.0.0, so the first /26 is not free
    await claimReady('first', 'True');
    assert.equal(await addressOf('first'), '10.75.0.0');
    await prefix('p26', { prefixLength: 26 });
    assert.equal(rec((await prefixReady('p26', 'True'))['status'])['cidr'], '10.75.0.64/26');
    await prefix('p25', { prefixLength: 25 });
    assert.equal(rec((await prefixReady('p25', 'True'))['status'])['cidr'], '10.75.0.128/25');
    await prefix('exact', { cidr: '10.75.0.64/27' });
    assert.match(
      String(ready(await prefixReady('exact', 'False'))?.['message']),
      /10.75.0.64\/27 overlaps an address or prefix/,
    );
    await prefix('too-big', { prefixLength: 24 });
    assert.match(String(ready(await prefixReady('too-big', 'False'))?.['message']), /no free aligned \/24/);
    // An address claim now finds the space the blocks left: .1 .. .63.
    await claim('second', 'blocks');
    await claimReady('second', 'True');
    assert.equal(await addressOf('second'), '10.75.0.1');
    await del(HB, 'prefixclaims', 'p26');
    assert.ok(await eventually(async () => (await get(HB, 'prefixclaims', 'p26')) === undefined, 30_000));
    await del(HB, 'prefixclaims', 'exact');
    await prefix('exact-2', { cidr: '10.75.0.64/27' });
    assert.equal(rec((await prefixReady('exact-2', 'True'))['status'])['cidr'], '10.75.0.64/27');
  });
});
