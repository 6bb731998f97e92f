// `hereabouts controller` flags, as an operator meets them: --help, and bad values refused before anything starts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { bin } from './harness.ts';

const run = (...args: string[]) =>
  spawnSync(bin, ['controller', ...args], { encoding: 'utf8', env: {}, timeout: 20_000 });

test('controller --help prints every flag and exits 0', () => {
  const r = run('--help');
  assert.equal(r.status, 0, r.stderr);
  for (const flag of [
    '--leader-elect-namespace',
    '--leader-elect-name',
    '--lease-duration',
    '--renew-deadline',
    '--retry-period',
    '--reconcile-interval',
    '--cleanup-terminating',
    '--cleanup-disrupted',
    '--verify-network-status',
    '--pending-grace',
    '--metrics-addr',
    '--health-addr',
  ]) {
    assert.ok(r.stdout.includes(flag), `${flag} missing from --help`);
  }
});

test('controller refuses a duration it cannot read, naming the flag (exit 2)', () => {
  const r = run('--reconcile-interval', 'soon');
  assert.equal(r.status, 2);
  assert.match(r.stderr, /--reconcile-interval "soon" is not a duration/);
});

test('controller refuses a renew deadline that is not shorter than the lease duration', () => {
  const r = run('--lease-duration', '10s', '--renew-deadline', '10s');
  assert.equal(r.status, 2);
  assert.match(r.stderr, /--renew-deadline 10s must be shorter than --lease-duration 10s/);
});

test('controller refuses a boolean flag that is neither true nor false', () => {
  const r = run('--cleanup-disrupted=maybe');
  assert.equal(r.status, 2);
  assert.match(r.stderr, /--cleanup-disrupted "maybe" must be true or false/);
});

test('controller without --kubeconfig outside a cluster says so and exits 1', () => {
  const r = run('--metrics-addr', '', '--health-addr', '');
  assert.equal(r.status, 1);
  assert.match(r.stderr, /not running in a cluster \(KUBERNETES_SERVICE_HOST is unset\)/);
});
