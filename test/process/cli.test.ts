// The command line of every subcommand, on the packaged executable: a bad invocation is one line naming the
// subcommand and the flag (a JSON object with -o json), exit 2; a failure names the CLI flag or variable, never a CNI
// configuration key, exit 1; every --help states the exit codes. Nothing here reaches an API server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { requireBinary } from '../support/paths.ts';

const bin = requireBinary();

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** The executable with `args`, in an environment of only `env` (no kubeconfig of the machine's, not in a pod). */
function hb(args: readonly string[], env: NodeJS.ProcessEnv = {}): Run {
  const home = mkdtempSync(join(tmpdir(), 'hab-cli-home-'));
  try {
    const run = spawnSync(bin, args, { env: { HOME: home, ...env }, encoding: 'utf8', timeout: 30_000 });
    return { code: run.status, stdout: run.stdout, stderr: run.stderr };
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

/** One line on stderr, nothing on stdout. */
function oneLine(run: Run): string {
  assert.equal(run.stdout, '', 'nothing on stdout');
  const lines = run.stderr.split('\n');
  assert.equal(lines.length, 2, `one line on stderr: ${run.stderr}`);
  assert.equal(lines[1], '');
  return lines[0] as string;
}

const SUBCOMMANDS = [
  'status',
  'ip',
  'pool',
  'orphans',
  'release',
  'check',
  'controller',
  'install',
  'agent',
  'version',
];
const CNI_KEYS = /kubernetes\.kubeconfig|ipam\.|log_level|log_file/;

test('an unknown flag is one line naming it and the subcommand, exit 2, for every subcommand', () => {
  for (const command of SUBCOMMANDS) {
    for (const flag of ['--foo', '--foo=bar', '-x']) {
      const run = hb([command, flag]);
      assert.equal(run.code, 2, `${command} ${flag}: ${run.stderr}`);
      const name = flag.split('=')[0] as string;
      assert.equal(oneLine(run), `hereabouts ${command}: unknown flag ${name} (see hereabouts ${command} --help)`);
    }
  }
});

test('an unknown flag or command of hereabouts itself is one line, exit 2', () => {
  const flag = hb(['--foo']);
  assert.equal(flag.code, 2);
  assert.equal(oneLine(flag), 'hereabouts: unknown flag --foo (see hereabouts --help)');
  const command = hb(['frobnicate']);
  assert.equal(command.code, 2);
  assert.equal(oneLine(command), 'hereabouts: unknown command "frobnicate" (see hereabouts --help)');
});

test('a bad value, a missing value or a wrong argument count is one line naming it, exit 2', () => {
  const cases: Array<[string[], string]> = [
    [['status', '-o', 'yaml'], 'hereabouts status: -o "yaml" must be table or json'],
    [['status', '--kubeconfig'], 'hereabouts status: --kubeconfig needs a value'],
    [['status', '--namespace', '--context', 'c'], 'hereabouts status: --namespace needs a value'],
    [['status', 'extra'], 'hereabouts status: takes no arguments, also got "extra"'],
    [['ip'], 'hereabouts ip: <address> is missing'],
    [['ip', '10.0.0.300'], 'hereabouts ip: <address> "10.0.0.300" is not an IPv4 or IPv6 address'],
    [['pool', 'a', 'b'], 'hereabouts pool: takes only <name>, also got "b"'],
    [['release', '10.0.0.1', '--force=maybe'], 'hereabouts release: --force "maybe" must be true or false'],
    [
      ['check', '--pending-grace', 'soon'],
      'hereabouts check: --pending-grace "soon" is not a duration (500ms, 15s, 5m)',
    ],
    [['orphans', '--cleanup-disrupted=no'], 'hereabouts orphans: --cleanup-disrupted "no" must be true or false'],
    [
      ['controller', '--reconcile-interval', 'soon'],
      'hereabouts controller: --reconcile-interval "soon" is not a duration (500ms, 15s, 5m)',
    ],
    [
      ['controller', '--cleanup-disrupted=maybe'],
      'hereabouts controller: --cleanup-disrupted "maybe" must be true or false',
    ],
    [['controller', '-n', ''], 'hereabouts controller: --namespace may not be empty'],
    [['install', '--once=sometimes'], 'hereabouts install: --once "sometimes" must be true or false'],
    [['agent', '--max-concurrent', '0'], 'hereabouts agent: --max-concurrent "0" must be a positive integer'],
    [['version', 'now'], 'hereabouts version: takes no arguments, also got "now"'],
  ];
  for (const [args, message] of cases) {
    const run = hb(args);
    assert.equal(run.code, 2, `${args.join(' ')}: ${run.stderr}`);
    const command = args[0] as string;
    assert.equal(oneLine(run), `${message} (see hereabouts ${command} --help)`);
  }
});

test('the connection flags the operator commands take are not unknown to the controller (-n too), nor -n to the installer', () => {
  const controller = hb(['controller', '--kubeconfig', '/nonexistent/kc', '--context', 'c', '-n', 'ipam']);
  assert.equal(controller.code, 1, controller.stderr);
  assert.equal(oneLine(controller), 'hereabouts controller: --kubeconfig "/nonexistent/kc" does not exist');
  const install = hb(['install', '-n', 'Not_A_Namespace'], { KUBERNETES_SERVICE_HOST: '10.96.0.1' });
  assert.equal(install.code, 2, install.stderr);
  assert.match(oneLine(install), /^hereabouts install: --namespace "Not_A_Namespace" is not a namespace name/);
  // The agent takes none: each call's network configuration names its kubeconfig.
  assert.equal(hb(['agent', '--kubeconfig', '/x']).code, 2);
});

test('a failure names the CLI flag or variable that led to the file, and the subcommand, exit 1', () => {
  const cases: Array<[string[], NodeJS.ProcessEnv, string]> = [
    [['status', '--kubeconfig', '/x'], {}, 'hereabouts status: --kubeconfig "/x" does not exist'],
    [['controller', '--kubeconfig', '/x'], {}, 'hereabouts controller: --kubeconfig "/x" does not exist'],
    [
      ['controller'],
      { KUBECONFIG: '/nonexistent/kc' },
      'hereabouts controller: $KUBECONFIG "/nonexistent/kc" does not exist',
    ],
    [
      ['check'],
      { KUBECONFIG: ':/nonexistent/kc:/other' },
      'hereabouts check: $KUBECONFIG "/nonexistent/kc" does not exist',
    ],
  ];
  for (const [args, env, message] of cases) {
    const run = hb(args, env);
    assert.equal(run.code, 1, `${args.join(' ')}: ${run.stderr}`);
    assert.equal(oneLine(run), message);
    assert.doesNotMatch(run.stderr, CNI_KEYS);
  }
});

test('the controller outside a pod reads ~/.kube/config as kubectl does, and says so when there is none', () => {
  const home = mkdtempSync(join(tmpdir(), 'hab-cli-kube-'));
  try {
    mkdirSync(join(home, '.kube'));
    writeFileSync(join(home, '.kube', 'config'), 'not: [a kubeconfig');
    const bad = hb(['controller'], { HOME: home });
    assert.equal(bad.code, 1, bad.stderr);
    assert.match(
      oneLine(bad),
      new RegExp(`^hereabouts controller: kubeconfig ${home}/\\.kube/config is not a valid kubeconfig`),
    );
    const none = hb(['controller']);
    assert.equal(none.code, 1);
    assert.match(
      oneLine(none),
      /^hereabouts controller: no kubeconfig: no --kubeconfig, no \$KUBECONFIG, no .*\/\.kube\/config, and not in a cluster \(KUBERNETES_SERVICE_HOST is unset\)$/,
    );
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
});

test('the controller in a pod keeps its ServiceAccount before $KUBECONFIG, and --context needs a kubeconfig there', () => {
  const pod = { KUBERNETES_SERVICE_HOST: '10.96.0.1', KUBECONFIG: '/nonexistent/kc' };
  const run = hb(['controller', '--metrics-addr', '', '--health-addr', ''], pod);
  assert.equal(run.code, 1, run.stderr);
  assert.doesNotMatch(run.stderr, /KUBECONFIG/, 'the ServiceAccount was tried, not $KUBECONFIG');
  const context = hb(['controller', '--context', 'other'], pod);
  assert.equal(context.code, 2);
  assert.match(oneLine(context), /^hereabouts controller: --context needs a kubeconfig/);
});

test('the installer names its flags, not the flat config keys they become', () => {
  const run = hb(['install', '--log-level', 'loud'], { KUBERNETES_SERVICE_HOST: '10.96.0.1' });
  assert.equal(run.code, 2, run.stderr);
  assert.match(oneLine(run), /^hereabouts install: --log-level "loud" is not one of debug, verbose, info/);
  assert.doesNotMatch(run.stderr, CNI_KEYS);
});

test('-o json, -ojson and -o=json: errors are one JSON object on stdout with the error line and the exit code', () => {
  for (const spelling of [['-o', 'json'], ['-ojson'], ['-o=json'], ['--output', 'json'], ['--output=json']]) {
    const failure = hb(['status', ...spelling, '--kubeconfig', '/x']);
    assert.equal(failure.code, 1, spelling.join(' '));
    assert.equal(failure.stderr, '');
    assert.deepEqual(JSON.parse(failure.stdout), {
      error: 'hereabouts status: --kubeconfig "/x" does not exist',
      exitCode: 1,
    });
  }
  const usage = hb(['check', '-ojson', '--foo']);
  assert.equal(usage.code, 2);
  assert.deepEqual(JSON.parse(usage.stdout), {
    error: 'hereabouts check: unknown flag --foo (see hereabouts check --help)',
    exitCode: 2,
  });
});

test('booleans read --flag, --flag=true, --flag=false, --flag true and --flag false', () => {
  for (const spelling of [
    ['--cleanup-terminating'],
    ['--cleanup-terminating=true'],
    ['--cleanup-terminating=false'],
    ['--cleanup-terminating', 'true'],
    ['--cleanup-terminating', 'false'],
  ]) {
    // Read past the flags: the failure is the missing kubeconfig, after every flag was accepted.
    for (const command of ['check', 'controller']) {
      const run = hb([command, ...spelling, '--kubeconfig', '/x']);
      assert.equal(run.code, 1, `${command} ${spelling.join(' ')}: ${run.stderr}`);
      assert.equal(oneLine(run), `hereabouts ${command}: --kubeconfig "/x" does not exist`);
    }
  }
  const release = hb(['release', '--force', 'true', '10.0.0.1', '--network', '', '--kubeconfig', '/x']);
  assert.equal(release.code, 1, release.stderr);
  assert.equal(oneLine(release), 'hereabouts release: --kubeconfig "/x" does not exist');
});

test('every --help states the exit codes, and exits 0', () => {
  for (const command of SUBCOMMANDS) {
    const run = hb([command, '--help']);
    assert.equal(run.code, 0, `${command}: ${run.stderr}`);
    assert.match(run.stdout, new RegExp(`^Usage: hereabouts ${command}`));
    assert.match(
      run.stdout,
      /Exit status: 0 all well, 1 a problem found or a failure, 2 a wrong command line/,
      command,
    );
  }
  const top = hb(['--help']);
  assert.equal(top.code, 0);
  assert.match(
    top.stdout,
    /Exit status, for every command: 0 all well, 1 a problem found .* or a failure, 2 a wrong command\nline/,
  );
});
