// Every CNI verb against the packaged executable on the local store, with the exact JSON expected on stdout.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCni, type CniOutcome } from '../support/cni.ts';
import { requireBinary } from '../support/paths.ts';

const bin = requireBinary();
const ALL_VERSIONS = ['0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0'];

describe('CNI verbs on the local store', () => {
  let dir: string;
  let n = 0;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'hab-verbs-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  /** A fresh network (own data_dir) per test, so tests do not see each other's allocations. */
  function network(ipam: Record<string, unknown>, cniVersion = '1.0.0'): Record<string, unknown> {
    n += 1;
    return {
      cniVersion,
      name: `verbs-${n}`,
      type: 'bridge',
      ipam: { type: 'hereabouts', datastore: 'local', data_dir: join(dir, `d${n}`), ...ipam },
    };
  }
  const call = (
    command: string,
    conf: Record<string, unknown>,
    containerId = 'ctr-1',
    extra: { ifname?: string; args?: string } = {},
  ): Promise<CniOutcome> =>
    runCni(
      bin,
      {
        command,
        containerId,
        netns: '/var/run/netns/test',
        ifname: extra.ifname ?? 'eth0',
        path: '/usr/lib/cni',
        args: extra.args ?? `IgnoreUnknown=1;K8S_POD_NAMESPACE=ns;K8S_POD_NAME=pod-${containerId}`,
      },
      conf,
    );
  const ok = (out: CniOutcome): Record<string, unknown> | undefined => {
    assert.equal(out.code, 0, `exit ${out.code}: ${out.stdout} ${out.stderr}`);
    return out.json;
  };

  test('VERSION echoes the requested version and lists every supported one', async () => {
    const out = await runCni(bin, { command: 'VERSION' }, { cniVersion: '1.0.0' });
    assert.deepEqual(ok(out), { cniVersion: '1.0.0', supportedVersions: ALL_VERSIONS });
  });

  test('ADD returns the first free address with gateway, routes and dns (1.0.0)', async () => {
    const conf = network({
      range: '10.1.0.0/24',
      gateway: '10.1.0.1',
      routes: [{ dst: '0.0.0.0/0' }, { dst: '192.168.0.0/16', gw: '10.1.0.254' }],
      dns: { nameservers: ['10.1.0.53'], search: ['svc.local'] },
    });
    assert.equal(
      (await call('ADD', conf)).stdout,
      JSON.stringify({
        cniVersion: '1.0.0',
        ips: [{ address: '10.1.0.2/24', gateway: '10.1.0.1' }],
        routes: [{ dst: '0.0.0.0/0' }, { dst: '192.168.0.0/16', gw: '10.1.0.254' }],
        dns: { nameservers: ['10.1.0.53'], search: ['svc.local'] },
      }) + '\n',
    );
  });

  for (const version of ['0.3.0', '0.3.1', '0.4.0']) {
    test(`ADD renders ips[].version for CNI ${version}`, async () => {
      const out = await call('ADD', network({ range: '10.2.0.0/24' }, version));
      assert.deepEqual(ok(out), { cniVersion: version, ips: [{ version: '4', address: '10.2.0.1/24' }] });
    });
  }

  test('ADD answers CNI 1.1.0 in 1.1.0 form', async () => {
    const out = await call('ADD', network({ range: 'fd00:1::/120' }, '1.1.0'));
    assert.deepEqual(ok(out), { cniVersion: '1.1.0', ips: [{ address: 'fd00:1::1/120' }] });
  });

  test('a cniVersions list picks the highest supported version', async () => {
    const conf = network({ range: '10.3.0.0/24' });
    delete conf['cniVersion'];
    conf['cniVersions'] = ['0.4.0', '1.0.0', '9.0.0'];
    assert.equal(ok(await call('ADD', conf))?.['cniVersion'], '1.0.0');
  });

  test('ADD is idempotent for the same pod and ifname, even with a new container id', async () => {
    const conf = network({ range: '10.4.0.0/24' });
    const args = 'IgnoreUnknown=1;K8S_POD_NAMESPACE=ns;K8S_POD_NAME=web-0';
    const first = ok(await call('ADD', conf, 'sandbox-a', { args }));
    const again = ok(await call('ADD', conf, 'sandbox-a', { args }));
    const recreated = ok(await call('ADD', conf, 'sandbox-b', { args }));
    assert.deepEqual(again, first);
    assert.deepEqual(recreated, first);
    // The record now belongs to sandbox-b: CHECK for it passes, for sandbox-a it fails.
    assert.equal((await call('CHECK', { ...conf, prevResult: first }, 'sandbox-b', { args })).code, 0);
    const stale = await call('CHECK', { ...conf, prevResult: first }, 'sandbox-a', { args });
    assert.equal(stale.json?.['code'], 102);
  });

  test('two interfaces of one pod get two addresses', async () => {
    const conf = network({ range: '10.5.0.0/24' });
    const a = ok(await call('ADD', conf, 'multi', { ifname: 'net1' }));
    const b = ok(await call('ADD', conf, 'multi', { ifname: 'net2' }));
    assert.notDeepEqual(a, b);
  });

  test('CHECK passes for an allocated prevResult and prints nothing', async () => {
    const conf = network({ range: '10.6.0.0/24' });
    const prev = ok(await call('ADD', conf));
    const out = await call('CHECK', { ...conf, prevResult: prev });
    assert.equal(out.code, 0, out.stdout);
    assert.equal(out.stdout, '');
  });

  test('CHECK fails with code 102 for an address this container does not hold', async () => {
    const conf = network({ range: '10.7.0.0/24' });
    ok(await call('ADD', conf));
    const out = await call('CHECK', {
      ...conf,
      prevResult: { cniVersion: '1.0.0', ips: [{ address: '10.7.0.99/24' }] },
    });
    assert.equal(out.json?.['code'], 102);
    assert.match(String(out.json['msg']), /10\.7\.0\.99/);
  });

  test('DEL releases the address, prints nothing, and is repeatable', async () => {
    const conf = network({ range: '10.8.0.0/24' });
    ok(await call('ADD', conf, 'gone'));
    for (let i = 0; i < 2; i++) {
      const out = await call('DEL', conf, 'gone');
      assert.equal(out.code, 0, out.stdout);
      assert.equal(out.stdout, '');
    }
    assert.deepEqual(ok(await call('ADD', conf, 'next'))?.['ips'], [{ address: '10.8.0.1/24' }]);
  });

  test('DEL of an attachment never seen succeeds without a data_dir', async () => {
    const out = await call('DEL', network({ range: '10.9.0.0/24' }), 'never-added');
    assert.equal(out.code, 0, out.stdout);
    assert.equal(out.stdout, '');
  });

  test('GC releases every attachment missing from cni.dev/valid-attachments', async () => {
    const conf = network({ range: '10.10.0.0/24', gc_grace_seconds: 0 }, '1.1.0');
    for (const id of ['keep', 'drop-1', 'drop-2']) ok(await call('ADD', conf, id));
    const gc = await runCni(
      bin,
      { command: 'GC', path: '/usr/lib/cni' },
      { ...conf, 'cni.dev/valid-attachments': [{ containerID: 'keep', ifname: 'eth0' }] },
    );
    assert.equal(gc.code, 0, gc.stdout + gc.stderr);
    assert.equal(gc.stdout, '');
    // .2 and .3 are free again; .1 is still held by "keep".
    assert.deepEqual(ok(await call('ADD', conf, 'after-gc'))?.['ips'], [{ address: '10.10.0.2/24' }]);
    assert.equal(
      (
        await call(
          'CHECK',
          { ...conf, prevResult: { cniVersion: '1.1.0', ips: [{ address: '10.10.0.1/24' }] } },
          'keep',
        )
      ).code,
      0,
    );
  });

  // The runtime may take its snapshot of valid attachments before an ADD commits: that ADD is not garbage.
  test('GC spares an allocation younger than gc_grace_seconds (default 300 s) though it is not in the valid list', async () => {
    const conf = network({ range: '10.10.1.0/24' }, '1.1.0');
    ok(await call('ADD', conf, 'after-snapshot'));
    const gc = await runCni(bin, { command: 'GC', path: '/usr/lib/cni' }, { ...conf, 'cni.dev/valid-attachments': [] });
    assert.equal(gc.code, 0, gc.stdout + gc.stderr);
    const check = { ...conf, prevResult: { cniVersion: '1.1.0', ips: [{ address: '10.10.1.1/24' }] } };
    assert.equal((await call('CHECK', check, 'after-snapshot')).code, 0, 'the young allocation is still held');
  });

  test('GC accepts the cni.dev/attachments spelling too', async () => {
    const conf = network({ range: '10.11.0.0/24', gc_grace_seconds: 0 }, '1.1.0');
    ok(await call('ADD', conf, 'stale'));
    const gc = await runCni(bin, { command: 'GC', path: '/usr/lib/cni' }, { ...conf, 'cni.dev/attachments': [] });
    assert.equal(gc.code, 0, gc.stdout);
    assert.deepEqual(ok(await call('ADD', conf, 'fresh'))?.['ips'], [{ address: '10.11.0.1/24' }]);
  });

  test('STATUS succeeds silently while the range has room', async () => {
    const out = await runCni(
      bin,
      { command: 'STATUS', path: '/usr/lib/cni' },
      network({ range: '10.12.0.0/30' }, '1.1.0'),
    );
    assert.equal(out.code, 0, out.stdout);
    assert.equal(out.stdout, '');
  });

  // A runtime that honours STATUS would mark the node NetworkNotReady (and evict its pods) for a full range.
  test('STATUS succeeds on an exhausted range: only ADD fails, with code 100', async () => {
    const conf = network({ range: '10.13.0.0/30' }, '1.1.0'); // two usable addresses
    ok(await call('ADD', conf, 'x1'));
    ok(await call('ADD', conf, 'x2'));
    const full = await call('ADD', conf, 'x3');
    assert.equal(full.json?.['code'], 100);
    const status = await runCni(bin, { command: 'STATUS', path: '/usr/lib/cni' }, conf);
    assert.equal(status.code, 0, status.stdout + status.stderr);
    assert.equal(status.stdout, '');
  });

  test('STATUS fails with code 50 when data_dir cannot be written', async () => {
    const conf = network({ range: '10.13.1.0/30' }, '1.1.0');
    const ipam = conf['ipam'] as Record<string, unknown>;
    writeFileSync(join(dir, 'not-a-dir'), '');
    const status = await runCni(
      bin,
      { command: 'STATUS', path: '/usr/lib/cni' },
      { ...conf, ipam: { ...ipam, data_dir: join(dir, 'not-a-dir', 'data') } },
    );
    assert.equal(status.json?.['code'], 50, status.stdout + status.stderr);
  });

  test('a requested address from runtimeConfig.ips is granted exactly', async () => {
    const conf = { ...network({ range: '10.14.0.0/24' }), runtimeConfig: { ips: ['10.14.0.77/24'] } };
    assert.deepEqual(ok(await call('ADD', conf))?.['ips'], [{ address: '10.14.0.77/24' }]);
  });

  test('a requested address from CNI_ARGS IP= is granted exactly', async () => {
    const out = await call('ADD', network({ range: '10.15.0.0/24' }), 'by-arg', {
      args: 'IgnoreUnknown=1;IP=10.15.0.33',
    });
    assert.deepEqual(ok(out)?.['ips'], [{ address: '10.15.0.33/24' }]);
  });

  test('a requested address already taken fails with code 101 and allocates nothing', async () => {
    const conf = network({ range: '10.16.0.0/24' });
    ok(await call('ADD', { ...conf, runtimeConfig: { ips: ['10.16.0.5'] } }, 'holder'));
    const out = await call('ADD', { ...conf, runtimeConfig: { ips: ['10.16.0.5'] } }, 'wants-same');
    assert.equal(out.json?.['code'], 101);
    assert.match(String(out.json['msg']), /10\.16\.0\.5/);
    assert.deepEqual(ok(await call('ADD', conf, 'plain'))?.['ips'], [{ address: '10.16.0.1/24' }]);
  });

  test('dual-stack: one address per range, range first then ipRanges', async () => {
    const out = await call(
      'ADD',
      network({ range: '10.17.0.0/24', ipRanges: [{ range: 'fd00:17::/64', range_start: 'fd00:17::100' }] }),
    );
    assert.deepEqual(ok(out)?.['ips'], [{ address: '10.17.0.1/24' }, { address: 'fd00:17::100/64' }]);
  });

  test('multi-range ADD is all or nothing: an exhausted IPv6 range leaves the IPv4 range untouched', async () => {
    const conf = network({ ipRanges: [{ range: '10.18.0.0/24' }, { range: 'fd00:18::/127' }] });
    ok(await call('ADD', conf, 'one'));
    ok(await call('ADD', conf, 'two'));
    const out = await call('ADD', conf, 'three');
    assert.equal(out.json?.['code'], 100);
    assert.match(String(out.json['msg']), /fd00:18::\/127/);
    // The IPv4 address tried for "three" (.3) was rolled back: the same IPv4 pool, used alone, hands it out.
    const v4only = { ...conf, ipam: { ...(conf['ipam'] as object), ipRanges: [{ range: '10.18.0.0/24' }] } };
    assert.deepEqual(ok(await call('ADD', v4only, 'probe'))?.['ips'], [{ address: '10.18.0.3/24' }]);
  });

  test('static addresses are returned as configured', async () => {
    const out = await call('ADD', network({ addresses: [{ address: '10.19.0.5/24', gateway: '10.19.0.1' }] }));
    assert.deepEqual(ok(out)?.['ips'], [{ address: '10.19.0.5/24', gateway: '10.19.0.1' }]);
  });
});
