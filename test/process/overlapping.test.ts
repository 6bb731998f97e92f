// enable_overlapping_ranges (the default) on the local store, through the packaged executable: pools of one network
// whose ranges overlap never give out one address twice.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCni, type CniOutcome } from '../support/cni.ts';
import { requireBinary } from '../support/paths.ts';

const bin = requireBinary();

function conf(dataDir: string, range: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    cniVersion: '1.0.0',
    name: 'overlap',
    type: 'bridge',
    ipam: { type: 'hereabouts', datastore: 'local', data_dir: dataDir, range, ...extra },
  };
}

const add = (dataDir: string, range: string, pod: string, extra: Record<string, unknown> = {}): Promise<CniOutcome> =>
  runCni(
    bin,
    {
      command: 'ADD',
      containerId: pod,
      netns: '/x',
      ifname: 'eth0',
      path: '/x',
      args: `K8S_POD_NAMESPACE=ns;K8S_POD_NAME=${pod}`,
    },
    conf(dataDir, range, extra),
  );
const del = (dataDir: string, range: string, pod: string): Promise<CniOutcome> =>
  runCni(bin, { command: 'DEL', containerId: pod, netns: '/x', ifname: 'eth0', path: '/x' }, conf(dataDir, range));
const addressOf = (out: CniOutcome): string => {
  assert.equal(out.code, 0, out.stdout + out.stderr);
  return (out.json?.['ips'] as Array<{ address: string }>)[0]!.address;
};

test('ADD on 10.80.0.0/24 then on 10.80.0.0/25 in the same network gives two different addresses', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hab-overlap-'));
  try {
    const dataDir = join(dir, 'data');
    assert.equal(addressOf(await add(dataDir, '10.80.0.0/24', 'pod-a')), '10.80.0.1/24');
    assert.equal(addressOf(await add(dataDir, '10.80.0.0/25', 'pod-b')), '10.80.0.2/25');
    // Released in the wide pool, the address is free for the narrow one again.
    assert.equal((await del(dataDir, '10.80.0.0/24', 'pod-a')).code, 0);
    assert.equal(addressOf(await add(dataDir, '10.80.0.0/25', 'pod-c')), '10.80.0.1/25');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a requested address held through an overlapping range is refused with code 101', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hab-overlap-'));
  try {
    const dataDir = join(dir, 'data');
    assert.equal(addressOf(await add(dataDir, '10.81.0.0/24', 'pod-a')), '10.81.0.1/24');
    const out = await runCni(
      bin,
      {
        command: 'ADD',
        containerId: 'pod-b',
        netns: '/x',
        ifname: 'eth0',
        path: '/x',
        args: 'IgnoreUnknown=1;IP=10.81.0.1',
      },
      conf(dataDir, '10.81.0.0/25'),
    );
    assert.equal(out.json?.['code'], 101, out.stdout);
    assert.match(String(out.json['msg']), /reserved through an overlapping range/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
