// Sticky addresses (docs/sticky.md) in the operator commands (the packaged executable), against the real API server:
// an IPPool record bound to StatefulSet/web/0, written as the plugin writes it, and a StatefulSet object (no
// controller-manager runs here, so it creates no pod: it just sits there). `pool` and `ip` name the binding and say
// the address is parked (no pod web-0) or in use, `status` counts it in STICKY and never as an orphan, `check` is
// consistent and `release` refuses it while the set holds the ordinal; once the set is scaled to 0 replicas, `ip`,
// `pool` and `check` say the binding is released (an informational notice: the controller releases the address
// after its --sticky-grace) and `release` frees it without --force.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { api, apiRequest, controlPlane, createNamespace, type Namespace } from '../../support/control-plane.ts';
import { ago, createPod } from '../controller/harness.ts';
import { allocationsOf, entry, hb, json, pool, reservation, type Entry } from './harness.ts';

const POOL = '10.130.0.0-24';

interface Notice {
  kind: string;
  address?: string;
  binding?: string;
  reason?: string;
  message: string;
}

describe('sticky addresses in pool, ip, status, check and release', () => {
  let ns: Namespace;
  let web0: Entry & { binding: string };
  const setPath = () => `/apis/apps/v1/namespaces/${ns.name}/statefulsets/web`;
  const podPath = () => `/api/v1/namespaces/${ns.name}/pods/web-0`;

  before(async () => {
    ns = await createNamespace(await controlPlane(), 'ops-sticky');
    web0 = {
      ...entry(ns, 'web-0', { podUid: 'uid-web-0-old', createdAt: ago(3_600_000) }),
      binding: 'StatefulSet/web/0',
    };
    await pool(ns, POOL, '10.130.0.0/24', { '5': web0 });
    await reservation(ns, '10.130.0.5', web0);
    await api(ns.cp, 'POST', `/apis/apps/v1/namespaces/${ns.name}/statefulsets`, {
      apiVersion: 'apps/v1',
      kind: 'StatefulSet',
      metadata: { name: 'web' },
      spec: {
        replicas: 1,
        serviceName: 'web',
        selector: { matchLabels: { app: 'web' } },
        template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'c', image: 'busybox' }] } },
      },
    });
  });
  after(async () => {
    await apiRequest(ns.cp, 'DELETE', `${podPath()}?gracePeriodSeconds=0`);
    await apiRequest(ns.cp, 'DELETE', setPath());
    await ns.cleanup();
  });

  test('pool names the binding and says the address is parked while no pod web-0 exists', () => {
    const run = hb(ns, ['pool', POOL]);
    assert.equal(run.code, 0, run.stderr);
    const lines = run.stdout.split('\n');
    assert.equal(
      lines[0],
      `IPPool ${POOL}: range 10.130.0.0/24, network (unnamed); 1 used of 254 (1 sticky, 1 of them parked), 253 free`,
    );
    assert.match(
      lines[1] ?? '',
      /^ADDRESS\s+POD\s+POD STATE\s+NODE\s+AGE\s+CONTAINER\s+IFNAME\s+RESERVATION\s+ORPHAN$/,
    );
    assert.match(
      lines[2] ?? '',
      new RegExp(
        `^10\\.130\\.0\\.5\\s+${ns.name}/web-0 bound to StatefulSet/web/0\\s+parked\\s+-\\s+1h\\s+ctr-web-0\\s+net1\\s+agrees\\s+-$`,
      ),
    );
    const report = json(hb(ns, ['pool', POOL, '-o', 'json'])) as {
      sticky: number;
      parked: number;
      allocations: Array<{ binding?: Record<string, unknown> }>;
    };
    assert.deepEqual([report.sticky, report.parked], [1, 1]);
    assert.deepEqual(report.allocations[0]?.binding, {
      binding: 'StatefulSet/web/0',
      namespace: ns.name,
      pod: 'parked',
      state: 'holds',
      seen: 'StatefulSet web has 1 replica (ordinal 0); pod web-0 is gone',
      keptUntil:
        'pod web-0 is gone and StatefulSet web no longer includes ordinal 0 (deleted, or scaled to 0 replicas)',
    });
  });

  test('ip names the binding, its namespace, that the StatefulSet still holds it, and until when it is kept', () => {
    const run = hb(ns, ['ip', '10.130.0.5']);
    assert.equal(run.code, 0, run.stderr);
    assert.equal(
      run.stdout.split('\n').slice(0, 6).join('\n'),
      [
        `10.130.0.5 is held by ${ns.name}/web-0 in IPPool ${POOL}`,
        '  network      (unnamed)',
        `  pod          parked: no pod holds it now (${ns.name}/web-0 is gone)`,
        '  node         -',
        `  binding      StatefulSet/web/0 in namespace ${ns.name}: held by its workload (StatefulSet web has 1 replica (ordinal 0); pod web-0 is gone)`,
        "  kept until   pod web-0 is gone and StatefulSet web no longer includes ordinal 0 (deleted, or scaled to 0 replicas), then for the controller's --sticky-grace (default 5m)",
      ].join('\n'),
    );
  });

  test('status counts the bound record in STICKY, and not as an orphan though its pod is gone', () => {
    const report = json(hb(ns, ['status', '-o', 'json'])) as { pools: Array<Record<string, unknown>> };
    const row = report.pools.find((p) => p['name'] === POOL);
    assert.deepEqual([row?.['used'], row?.['sticky'], row?.['orphans']], [1, 1, 0]);
    const table = hb(ns, ['status']);
    assert.equal(table.code, 0, table.stderr);
    const lines = table.stdout.split('\n');
    assert.match(
      lines[1] ?? '',
      /^POOL\s+RANGE\s+CAPACITY\s+USED\s+WARM\s+CLAIMS\s+PREFIXES\s+STICKY\s+FREE\s+ORPHANS\s+NODE$/,
    );
    assert.match(lines.find((l) => l.startsWith(`${POOL} `)) ?? '', /\s254\s+1\s+0\s+0\s+0\s+1\s+253\s+0\s+-$/);
  });

  test('check is consistent while the binding holds; release refuses the address, naming the binding', async () => {
    const check = hb(ns, ['check', '--reservation-grace', '0s', '-o', 'json']);
    const report = json(check) as { problems: unknown[]; notices: Notice[] };
    assert.deepEqual([report.problems, report.notices], [[], []]);
    const refused = hb(ns, ['release', '10.130.0.5', '--network', '']);
    assert.equal(refused.code, 1, refused.stderr);
    assert.equal(
      refused.stdout,
      `refused to release 10.130.0.5 of network (unnamed): sticky address bound to StatefulSet/web/0 in namespace ${ns.name}, which still holds it (StatefulSet web has 1 replica (ordinal 0); pod web-0 is gone): kept until pod web-0 is gone and StatefulSet web no longer includes ordinal 0 (deleted, or scaled to 0 replicas): --force releases it anyway\n`,
    );
    assert.deepEqual(Object.keys(await allocationsOf(ns, POOL)), ['5']);
  });

  test('a pod web-0 (another one than the record names): the address is in use, no longer parked', async () => {
    await createPod(ns, 'web-0', { phase: 'Pending' });
    try {
      const run = hb(ns, ['pool', POOL]);
      assert.equal(run.code, 0, run.stderr);
      assert.match(run.stdout, /; 1 used of 254 \(1 sticky\), 253 free\n/);
      assert.match(
        run.stdout,
        new RegExp(`\\n10\\.130\\.0\\.5\\s+${ns.name}/web-0 bound to StatefulSet/web/0\\s+recreated\\s`),
      );
      assert.match(
        hb(ns, ['ip', '10.130.0.5']).stdout,
        /\n {2}binding {6}StatefulSet\/web\/0 in namespace \S+: held by its workload \(StatefulSet web has 1 replica \(ordinal 0\); pod web-0 exists\)\n/,
      );
    } finally {
      await api(ns.cp, 'DELETE', `${podPath()}?gracePeriodSeconds=0`);
    }
    for (let i = 0; i < 100 && (await apiRequest(ns.cp, 'GET', podPath())).status !== 404; i++)
      await new Promise((resolve) => setTimeout(resolve, 100));
  });

  test('scaled to 0 replicas: ip, pool and check say the binding is released; release frees it without --force', async () => {
    await api(ns.cp, 'PATCH', setPath(), { spec: { replicas: 0 } }, 'application/merge-patch+json');

    const ip = hb(ns, ['ip', '10.130.0.5']);
    assert.equal(ip.code, 0, ip.stderr);
    assert.deepEqual(ip.stdout.split('\n').slice(4, 6), [
      `  binding      StatefulSet/web/0 in namespace ${ns.name}: NO LONGER HELD (scaled-down): StatefulSet web has 0 replicas; pod web-0 is gone`,
      '  released     by the controller once it has seen this for its --sticky-grace (default 5m), unless the workload takes it back first',
    ]);
    const ipJson = json(hb(ns, ['ip', '10.130.0.5', '-o', 'json'])) as {
      holders: Array<{ binding?: { state: string; reason?: string } }>;
    };
    assert.deepEqual(ipJson.holders[0]?.binding?.state, 'released');
    assert.deepEqual(ipJson.holders[0].binding.reason, 'scaled-down');

    assert.match(
      hb(ns, ['pool', POOL]).stdout,
      /\n10\.130\.0\.5\s+\S+ bound to StatefulSet\/web\/0\s+parked\s.*\sagrees\s+scaled-down \(after sticky grace\)\n/,
    );

    // A notice, not a problem: the exit status stays 0, and the address is no orphan.
    const check = hb(ns, ['check', '--reservation-grace', '0s']);
    assert.equal(check.code, 0, check.stdout + check.stderr);
    assert.equal(
      check.stdout,
      [
        `namespace ${ns.name}: 1 pool(s), 1 allocation(s), 1 reservation(s): consistent, 1 notice(s)`,
        'NOTICE            DETAILS',
        `binding-released  10.130.0.5 in IPPool ${POOL} is bound to StatefulSet/web/0 in namespace ${ns.name}, whose workload no longer holds it (scaled-down: StatefulSet web has 0 replicas; pod web-0 is gone): the controller releases it after its --sticky-grace (default 5m)`,
        '',
      ].join('\n'),
    );
    const report = json(hb(ns, ['check', '--reservation-grace', '0s', '-o', 'json'])) as {
      problems: unknown[];
      notices: Notice[];
    };
    assert.deepEqual(report.problems, []);
    assert.deepEqual(
      report.notices.map((n) => [n.kind, n.address, n.binding, n.reason]),
      [['binding-released', '10.130.0.5', 'StatefulSet/web/0', 'scaled-down']],
    );
    const orphans = json(hb(ns, ['orphans', '-o', 'json'])) as { allocations: unknown[]; waiting: unknown[] };
    assert.deepEqual([orphans.allocations, orphans.waiting], [[], []]);

    const released = hb(ns, ['release', '10.130.0.5', '--network', '']);
    assert.equal(released.code, 0, released.stdout + released.stderr);
    assert.match(
      released.stdout,
      new RegExp(
        `^released 10\\.130\\.0\\.5 from IPPool ${POOL} \\(was ${ns.name}/web-0, .*\\nreservation 10\\.130\\.0\\.5: deleted\\n$`,
      ),
    );
    assert.deepEqual(await allocationsOf(ns, POOL), {});
  });
});
