// A node cache that cannot be written after the pool write landed (a full disk, a quota, a file size limit): the
// API is the truth, so the ADD succeeds with the address it committed, and the stale cache is dropped so that the
// next call reads the API instead of planning on a version older than this node's own write.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCni, type CniOutcome } from '../../support/cni.ts';
import { controlPlane, createNamespace, type Namespace } from '../../support/control-plane.ts';
import { requireBinary } from '../../support/paths.ts';
import { cniConf, podCall, poolView } from './harness.ts';

let ns: Namespace;

before(async () => {
  ns = await createNamespace(await controlPlane(), 'cachefail');
});

after(async () => {
  // Unset if before() failed: after hooks run all the same.
  await (ns as Namespace | undefined)?.cleanup();
});

const NODE = 'worker-1';
const NETWORK = 'cache-full';
const POOL = '10.95.0.0-24';
/** Files larger than this cannot be written by the limited plugin (RLIMIT_FSIZE: EFBIG, as on a full quota). */
const FILE_SIZE_LIMIT = 1024;

/** The plugin as the runtime starts it, optionally under a file size limit that only the pool cache exceeds. */
function add(containerId: string, options: { limited: boolean }): Promise<CniOutcome> {
  const conf = cniConf(ns, NODE, { name: NETWORK, range: '10.95.0.0/24' });
  const ipam = { ...(conf['ipam'] as Record<string, unknown>) };
  delete ipam['log_file']; // the log goes to stderr: only the cache may meet the limit
  let binary = requireBinary();
  if (options.limited) {
    binary = join(ns.dir, 'limited-plugin');
    writeFileSync(binary, `#!/bin/sh\nexec prlimit --fsize=${FILE_SIZE_LIMIT} -- ${requireBinary()}\n`);
    chmodSync(binary, 0o755);
  }
  return runCni(
    binary,
    podCall('ADD', containerId),
    { ...conf, ipam },
    { extraEnv: { NODENAME: NODE, HEREABOUTS_STATS_DIR: join(ns.dir, 'no-stats') } },
  );
}

const addressOf = (outcome: CniOutcome) =>
  (outcome.json?.['ips'] as Array<{ address: string }> | undefined)?.[0]?.address;

test('a pool write that landed is reported as done when the node cache cannot be written, and the stale cache is dropped', async () => {
  // Other pods' records make the cached pool larger than the limit; the lock file and the rest stay below it.
  const allocations: Record<string, Record<string, string>> = {};
  for (let i = 1; i <= 40; i++)
    allocations[String(i)] = { id: `c-filler-${i}`, podref: `default/filler-${i}`, ifname: 'eth0' };
  await ns.create('ippools', {
    apiVersion: 'whereabouts.cni.cncf.io/v1alpha1',
    kind: 'IPPool',
    metadata: { name: POOL },
    spec: { range: '10.95.0.0/24', allocations },
  });
  const warm = await add('c-warm', { limited: false });
  assert.equal(warm.code, 0, warm.stdout + warm.stderr);
  const cacheFile = join(ns.dir, 'nodes', NODE, NETWORK, `${POOL}.json`);
  assert.ok(readFileSync(cacheFile, 'utf8').length > FILE_SIZE_LIMIT, 'the cached pool must exceed the limit');

  const limited = await add('c-limited', { limited: true });
  const pool = await poolView(ns, POOL);
  const committed = [...(pool?.allocations ?? [])].find(([, entry]) => entry['id'] === 'c-limited')?.[0];
  assert.equal(committed, '10.95.0.42', 'the pool write landed');
  assert.equal(limited.code, 0, `the ADD failed although its address is committed: ${limited.stdout}`);
  assert.equal(addressOf(limited), '10.95.0.42/24');
  assert.ok(
    (await ns.get('overlappingrangeipreservations', '10.95.0.42')) !== undefined,
    'the committed address keeps its reservation',
  );
  // The cache holds the version before this node's own write: it must not be used again.
  const cached = existsSync(cacheFile)
    ? (JSON.parse(readFileSync(cacheFile, 'utf8')) as { resourceVersion: string }).resourceVersion
    : undefined;
  assert.ok(
    cached === undefined || cached === pool?.resourceVersion,
    `the node cache kept resourceVersion ${cached}, older than the pool's ${pool?.resourceVersion}`,
  );
});
