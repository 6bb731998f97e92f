// `hereabouts release` of a warm address (a node agent's warm record, src/store/warm-record.ts) against a real API
// server. The agent hands its warm addresses to pods from its own state, without reading the pool: a warm record
// freed while its node exists lets the agent hand out an address the pool no longer holds, and the next ADD
// elsewhere gives it out twice. So release refuses it while the node exists, --force included, and when the node
// cannot be read (it may exist); the warm record of a node that is gone is an orphan and goes like one. The same
// holds for a warm reservation no pool holds (an agent's claim reserves before its pool write). `check` names the
// gone node's warm record.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { api, controlPlane, createNamespace, kubeconfigFor, type Namespace } from '../../support/control-plane.ts';
import { allocationsOf, hb, json, pool, reservation, type Entry } from './harness.ts';

const POOL = 'warm-10.91.0.0-24';
/** A warm record as the agent writes it: id hereabouts-warm:<node>/<pool>/<settings>, no pod, interface warm. */
const warm = (node: string): Entry => ({ id: `hereabouts-warm:${node}/${POOL}/0123abcd`, podref: '', ifname: 'warm' });

describe('hereabouts release of a warm address', () => {
  let ns: Namespace;
  let live: string;
  let gone: string;
  const release = (...args: string[]) => hb(ns, ['release', ...args]);
  before(async () => {
    ns = await createNamespace(await controlPlane(), 'ops-warm');
    live = `${ns.name}-live`;
    gone = `${ns.name}-gone`;
    await api(ns.cp, 'POST', '/api/v1/nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name: live } });
    await pool(ns, POOL, '10.91.0.0/24', { '1': warm(live), '2': warm(gone), '3': warm(live) });
    await reservation(ns, 'warm-10.91.0.1', warm(live));
    await reservation(ns, 'warm-10.91.0.2', warm(gone));
    await reservation(ns, 'warm-10.91.0.3', warm(live));
    // Reservations no pool holds: an agent's claim between its reserve and its pool write, and a gone node's leftover.
    await reservation(ns, 'warm-10.91.0.8', warm(live));
    await reservation(ns, 'warm-10.91.0.9', warm(gone));
  });
  after(async () => {
    await api(ns.cp, 'DELETE', `/api/v1/nodes/${live}`);
    await ns.cleanup();
  });

  test("a live node's warm address is refused, --force too: exit 1, the record and its reservation stay", async () => {
    for (const force of [[], ['--force']]) {
      const run = release('10.91.0.1', '--network', 'warm', ...force);
      assert.equal(run.code, 1, `${force.join('')}\nstdout: ${run.stdout}\nstderr: ${run.stderr}`);
      assert.match(run.stdout, /^refused to release 10\.91\.0\.1 of network warm: /);
      assert.ok(
        run.stdout.includes(`10.91.0.1 in IPPool ${POOL} is a warm address of node ${live}, which exists:`),
        run.stdout,
      );
      assert.match(run.stdout, /may hand it to a pod at any moment/);
      assert.match(run.stdout, /stop or restart the node's agent/);
      assert.match(run.stdout, /the controller releases them once the node is gone/);
      assert.match(run.stdout, /--force does not release it\n$/);
      assert.deepEqual((await allocationsOf(ns, POOL))['1'], warm(live));
      assert.notEqual(await ns.get('overlappingrangeipreservations', 'warm-10.91.0.1'), undefined);
    }
  });

  test('-o json: the refusal in the usual shape', () => {
    const report = json(release('10.91.0.1', '--network', 'warm', '--force', '-o', 'json'), 1) as Record<
      string,
      unknown
    >;
    assert.deepEqual(Object.keys(report).sort(), [
      'address',
      'network',
      'refused',
      'released',
      'reservation',
      'skipped',
    ]);
    assert.deepEqual(report['released'], []);
    assert.deepEqual(report['reservation'], { name: 'warm-10.91.0.1', outcome: 'kept' });
    assert.match(String(report['refused']), new RegExp(`warm address of node ${live}, which exists`));
  });

  test("a gone node's warm address is an orphan: released without --force, with its reservation", async () => {
    const run = release('10.91.0.2', '--network', 'warm');
    assert.equal(run.code, 0, `stdout: ${run.stdout}\nstderr: ${run.stderr}`);
    assert.equal(
      run.stdout,
      `released 10.91.0.2 from IPPool ${POOL} (was no pod, container ${warm(gone).id}, interface warm)\nreservation warm-10.91.0.2: deleted\n`,
    );
    const now = await allocationsOf(ns, POOL);
    assert.ok(!('2' in now));
    assert.deepEqual(now['1'], warm(live));
    assert.equal(await ns.get('overlappingrangeipreservations', 'warm-10.91.0.2'), undefined);
  });

  test("a live node's warm reservation no pool holds is kept (the agent's claim may be writing it), --force too", async () => {
    for (const force of [[], ['--force']]) {
      const run = release('10.91.0.8', '--network', 'warm', ...force);
      assert.equal(run.code, 1, `stdout: ${run.stdout}\nstderr: ${run.stderr}`);
      assert.match(
        run.stdout,
        new RegExp(`^refused to release 10\\.91\\.0\\.8 of network warm: .*node ${live}, which exists`),
      );
      assert.notEqual(await ns.get('overlappingrangeipreservations', 'warm-10.91.0.8'), undefined);
    }
    const leftover = release('10.91.0.9', '--network', 'warm');
    assert.equal(leftover.code, 0, `stdout: ${leftover.stdout}\nstderr: ${leftover.stderr}`);
    assert.equal(leftover.stdout, 'reservation warm-10.91.0.9: deleted\n');
  });

  test('a user who may not read the node is refused, --force too (the node may exist)', async () => {
    const base = `/api/v1/namespaces/${ns.name}`;
    const rbac = `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns.name}`;
    await api(ns.cp, 'POST', `${base}/serviceaccounts`, {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name: 'no-nodes' },
    });
    // Everything release uses but nodes.
    await api(ns.cp, 'POST', `${rbac}/roles`, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: 'no-nodes' },
      rules: [
        {
          apiGroups: ['whereabouts.cni.cncf.io'],
          resources: ['ippools', 'nodeslicepools', 'overlappingrangeipreservations'],
          verbs: ['get', 'list', 'patch', 'update', 'delete'],
        },
        { apiGroups: [''], resources: ['pods'], verbs: ['get'] },
      ],
    });
    await api(ns.cp, 'POST', `${rbac}/rolebindings`, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'no-nodes' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'no-nodes' },
      subjects: [{ kind: 'ServiceAccount', name: 'no-nodes', namespace: ns.name }],
    });
    const token = (await api(ns.cp, 'POST', `${base}/serviceaccounts/no-nodes/token`, {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: { expirationSeconds: 600 },
    })) as { status: { token: string } };
    const kubeconfig = join(ns.dir, 'no-nodes.kubeconfig');
    writeFileSync(kubeconfig, kubeconfigFor(ns.cp, ns.name, { token: token.status.token }), { mode: 0o600 });
    // The RBAC authorizer reads through an informer: wait until the new binding is seen (the pools can be listed).
    const forced = () =>
      hb(undefined, ['release', '10.91.0.3', '--network', 'warm', '--force', '--kubeconfig', kubeconfig]);
    let run = forced();
    for (let i = 0; i < 50 && run.stdout === ''; i++) {
      await new Promise((r) => setTimeout(r, 100));
      run = forced();
    }
    assert.equal(run.code, 1, `stdout: ${run.stdout}\nstderr: ${run.stderr}`);
    assert.match(
      run.stdout,
      new RegExp(
        `^refused to release 10\\.91\\.0\\.3 of network warm: .*warm address of node ${live}, which could not be read \\(.*403`,
      ),
    );
    assert.match(run.stdout, /--force does not release it\n$/);
    assert.deepEqual((await allocationsOf(ns, POOL))['3'], warm(live));
  });

  test("check names the gone node's warm record (warm-of-gone-node), not the live node's", async () => {
    await pool(ns, 'warm-10.92.0.0-24', '10.92.0.0/24', { '1': warm(live), '2': warm(gone) });
    const report = json(hb(ns, ['check', '--reservation-grace', '0s', '-o', 'json']), 1) as {
      problems: Array<{ kind: string; pool?: string; address?: string; message: string }>;
    };
    const found = report.problems.filter((p) => p.kind === 'warm-of-gone-node');
    assert.deepEqual(
      found.map((p) => [p.pool, p.address]),
      [['warm-10.92.0.0-24', '10.92.0.2']],
      JSON.stringify(report.problems),
    );
    assert.match(found[0]?.message ?? '', new RegExp(`${gone}, a node that no longer exists`));
  });
});
