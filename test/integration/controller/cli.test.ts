// `hereabouts controller` flags, as an operator meets them: --help, bad values refused before anything starts, and
// the kubeconfig found without --kubeconfig (on the real API server).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { controlPlane, createNamespace, kubeconfigFor, type Namespace } from '../../support/control-plane.ts';
import { bin, parseLines } from './harness.ts';

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

test('controller without any kubeconfig outside a cluster says so and exits 1', () => {
  const r = run('--metrics-addr', '', '--health-addr', '');
  assert.equal(r.status, 1);
  assert.match(
    r.stderr,
    /^hereabouts controller: no kubeconfig: no --kubeconfig, no \$KUBECONFIG, no .*, and not in a cluster \(KUBERNETES_SERVICE_HOST is unset\)\n$/,
  );
});

describe('controller finds its kubeconfig as kubectl does outside a pod', () => {
  let ns: Namespace;
  before(async () => {
    ns = await createNamespace(await controlPlane(), 'ctl-cli');
  });
  after(() => ns.cleanup());

  /** `controller --once` in an environment of only `env`; the namespace it announced at start. */
  const once = (env: NodeJS.ProcessEnv, ...args: string[]) => {
    const r = spawnSync(
      bin,
      [
        'controller',
        '--once',
        '--metrics-addr',
        '',
        '--health-addr',
        '',
        '--claims',
        'none',
        '--sticky',
        'none',
        ...args,
      ],
      {
        encoding: 'utf8',
        env,
        timeout: 90_000,
      },
    );
    const started = parseLines(r.stderr).find((l) => l.msg === 'controller started');
    return { code: r.status, stderr: r.stderr, namespace: started?.['namespace'] };
  };

  test('$KUBECONFIG (its first file) without --kubeconfig', () => {
    const r = once({ HOME: ns.dir, KUBECONFIG: `${ns.kubeconfig}:/nonexistent/second` });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.namespace, ns.name);
  });

  test('~/.kube/config without --kubeconfig or $KUBECONFIG', () => {
    const home = join(ns.dir, 'home');
    mkdirSync(join(home, '.kube'), { recursive: true });
    copyFileSync(ns.kubeconfig, join(home, '.kube', 'config'));
    const r = once({ HOME: home });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.namespace, ns.name);
  });

  test('-n and --context as the operator commands take them', () => {
    const file = join(ns.dir, 'two-contexts');
    // The current context points at "default"; the one named "pools" at the test namespace.
    const withSecond = kubeconfigFor(ns.cp, 'default').replace(
      'contexts:\n',
      `contexts:\n  - name: pools\n    context:\n      cluster: test\n      user: test\n      namespace: default\n`,
    );
    writeFileSync(file, withSecond, { mode: 0o600 });
    const r = once({ HOME: ns.dir }, '--kubeconfig', file, '--context', 'pools', '-n', ns.name);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.namespace, ns.name);
    const unknown = once({ HOME: ns.dir }, '--kubeconfig', file, '--context', 'nope');
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /^hereabouts controller: --context: --kubeconfig .* has no context "nope"/);
  });
});
