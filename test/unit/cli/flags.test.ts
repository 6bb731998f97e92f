// The one command-line parser every subcommand uses (src/cli/flags.ts), and the kubeconfig order of the connection
// flags (src/cli/connect.ts): each spelling an operator may type, and each mistake named by the flag as written.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { duration, parseFlags, UsageError } from '../../../src/cli/flags.ts';
import { commonFlagsOf, COMMON_FLAGS, endpointLoader } from '../../../src/cli/connect.ts';

const SPECS = {
  output: { type: 'string', short: 'o', default: 'table' },
  namespace: { type: 'string', short: 'n' },
  force: { type: 'boolean' },
  'pool-status': { type: 'boolean', default: true },
} as const;

const parse = (...argv: string[]) => parseFlags(argv, SPECS);
const usageError = (message: string) => (err: unknown) => err instanceof UsageError && err.message === message;

test('parseFlags(): -o json, -ojson, -o=json, --output json and --output=json are the same', () => {
  for (const argv of [['-o', 'json'], ['-ojson'], ['-o=json'], ['--output', 'json'], ['--output=json']]) {
    assert.equal(parse(...argv).values.output, 'json', argv.join(' '));
  }
  assert.equal(parse().values.output, 'table', 'the default');
});

test('parseFlags(): a boolean is --flag, --flag=true|false or --flag true|false; absent it is false or its default', () => {
  assert.equal(parse('--force').values.force, true);
  assert.equal(parse('--force=true').values.force, true);
  assert.equal(parse('--force=false').values.force, false);
  assert.equal(parse('--force', 'true').values.force, true);
  assert.equal(parse('--force', 'false').values.force, false);
  assert.equal(parse().values.force, false);
  assert.equal(parse().values['pool-status'], true);
  assert.equal(parse('--pool-status', 'false').values['pool-status'], false);
  assert.equal(parse('--pool-status=false').values['pool-status'], false);
});

test('parseFlags(): a word after a boolean flag that is not true or false stays a positional argument', () => {
  const parsed = parse('--force', '10.0.0.1', '-n', 'ipam');
  assert.equal(parsed.values.force, true);
  assert.deepEqual(parsed.positionals, ['10.0.0.1']);
  assert.equal(parsed.values.namespace, 'ipam');
});

test('parseFlags(): positionals anywhere, and everything after -- is one', () => {
  const parsed = parse('a', '-n', 'x', 'b', '--', '--force', '-o');
  assert.deepEqual(parsed.positionals, ['a', 'b', '--force', '-o']);
  assert.equal(parsed.values.force, false);
  assert.equal(parse('-').positionals[0], '-', 'a lone - is an argument');
});

test('parseFlags(): an empty value is a value (--metrics-addr "")', () => {
  assert.equal(parse('--namespace', '').values.namespace, '');
  assert.equal(parse('--namespace=').values.namespace, '');
  assert.equal(parse('-n=').values.namespace, '');
});

test('parseFlags(): an unknown flag is named as written, long or short, without its value', () => {
  assert.throws(() => parse('--foo'), usageError('unknown flag --foo'));
  assert.throws(() => parse('--foo=bar'), usageError('unknown flag --foo'));
  assert.throws(() => parse('-x'), usageError('unknown flag -x'));
  assert.throws(() => parse('-xyz'), usageError('unknown flag -x'));
  assert.throws(() => parse('--constructor'), usageError('unknown flag --constructor'), 'not a property of Object');
  assert.throws(() => parse('--__proto__'), usageError('unknown flag --__proto__'));
});

test('parseFlags(): a missing value, or a flag where the value should be, names the flag', () => {
  assert.throws(() => parse('-o'), usageError('-o needs a value'));
  assert.throws(() => parse('--namespace'), usageError('--namespace needs a value'));
  assert.throws(() => parse('--namespace', '-o', 'json'), usageError('--namespace needs a value'));
  assert.equal(parse('--namespace=-x').values.namespace, '-x', 'attached, a value may start with -');
});

test('parseFlags(): a boolean with another value names the flag and the value', () => {
  assert.throws(() => parse('--force=yes'), usageError('--force "yes" must be true or false'));
  assert.throws(() => parse('--pool-status=1'), usageError('--pool-status "1" must be true or false'));
});

test('parseFlags() lenient: reads -o json from a command line that is wrong otherwise', () => {
  const parsed = parseFlags(['--foo', '-o', 'json', '--force=maybe', '--namespace'], SPECS, { lenient: true });
  assert.equal(parsed.values.output, 'json');
  assert.equal(parsed.values.force, false);
});

test('commonFlagsOf(): -o is table or json; the connection flags may not be empty', () => {
  const values = (...argv: string[]) => parseFlags(argv, COMMON_FLAGS).values;
  assert.deepEqual(commonFlagsOf(values('-ojson', '-n', 'ipam', '--context', 'c')), {
    output: 'json',
    namespace: 'ipam',
    context: 'c',
  });
  assert.throws(() => commonFlagsOf(values('-o', 'yaml')), usageError('-o "yaml" must be table or json'));
  assert.throws(() => commonFlagsOf(values('--kubeconfig=')), usageError('--kubeconfig may not be empty'));
});

test('duration(): Go durations and bare seconds; a bad one is a UsageError naming the flag', () => {
  assert.deepEqual(
    ['500ms', '15s', '5m', '1h', '2'].map((d) => duration(d, 'x')),
    [500, 15_000, 300_000, 3_600_000, 2000],
  );
  assert.throws(
    () => duration('soon', 'pending-grace'),
    usageError('--pending-grace "soon" is not a duration (500ms, 15s, 5m)'),
  );
});

test('endpointLoader(): --kubeconfig, else $KUBECONFIG, else ~/.kube/config; in a pod the operator commands use them first', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'hab-flags-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const kubeconfig = (name: string, server: string): string => {
    const path = join(dir, name);
    writeFileSync(
      path,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'c', cluster: { server } }],
        users: [{ name: 'u', user: { token: 't' } }],
        contexts: [{ name: 'x', context: { cluster: 'c', user: 'u', namespace: 'pools' } }],
        'current-context': 'x',
      }),
    );
    return path;
  };
  const flag = kubeconfig('flag', 'https://flag.example:6443');
  const variable = kubeconfig('variable', 'https://variable.example:6443');
  mkdirSync(join(dir, '.kube'));
  kubeconfig(join('.kube', 'config'), 'https://home.example:6443');
  const server = async (env: NodeJS.ProcessEnv, connection = {}, inClusterFirst = false): Promise<string> => {
    const endpoint = await endpointLoader(connection, { env, inClusterFirst })();
    endpoint.agent.destroy();
    return endpoint.server;
  };
  const pod = { KUBERNETES_SERVICE_HOST: '10.96.0.1', HOME: dir };
  assert.equal(await server({ HOME: dir, KUBECONFIG: variable }, { kubeconfig: flag }), 'https://flag.example:6443');
  assert.equal(await server({ HOME: dir, KUBECONFIG: `:${variable}:${flag}` }), 'https://variable.example:6443');
  assert.equal(await server({ HOME: dir }), 'https://home.example:6443');
  assert.equal(await server({ ...pod, KUBECONFIG: variable }), 'https://variable.example:6443');
  // The controller in a pod: the ServiceAccount before $KUBECONFIG and ~/.kube/config, after --kubeconfig.
  assert.equal(await server({ ...pod }, { kubeconfig: flag }, true), 'https://flag.example:6443');
  // (Outside a pod the ServiceAccount's files are missing; in one, its server is KUBERNETES_SERVICE_HOST's.)
  const inPod = await server({ ...pod, KUBECONFIG: variable }, {}, true).catch((err: unknown) => String(err));
  assert.match(inPod, /^https:\/\/10\.96\.0\.1:443$|serviceaccount\/namespace/);
  assert.throws(
    () => endpointLoader({ context: 'x' }, { env: pod, inClusterFirst: true }),
    usageError(
      '--context needs a kubeconfig (--kubeconfig, $KUBECONFIG or ~/.kube/config); in a cluster there is none',
    ),
  );
  assert.throws(
    () => endpointLoader({}, { env: { HOME: join(dir, 'nowhere') } }),
    /^Error: no kubeconfig: no --kubeconfig, no \$KUBECONFIG, no .*nowhere\/\.kube\/config, and not in a cluster/,
  );
});
