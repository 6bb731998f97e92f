// The demo leaves the machine as it found it. Its bridge network has `isGateway: true`, and Debian's bridge plugin
// then writes net.ipv4.ip_forward = 1 (and net.ipv6.conf.all.forwarding = 1), which the kernel carries to every
// interface of the namespace the plugin runs in: a demo must not turn a user's machine into a router. Checked on this
// machine as it is (read before and after, nothing written), and from a namespace of ours standing in for a machine
// whose forwarding is off, and for one where it is on, so that the values the demo starts from are known. The e2e
// suites check the same around themselves (E2eWorld.close in harness.ts).
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { forwardingChanges, readForwarding, type Forwarding } from '../support/host-sysctls.ts';
import { e2eSkipReason, Netns } from '../support/netns.ts';
import { embeddedNode, repoRoot, requireBinary } from '../support/paths.ts';

const skip =
  e2eSkipReason() ??
  (spawnSync('nsenter', ['--version']).status === 0 ? undefined : 'nsenter (util-linux) is not installed');
if (skip !== undefined) console.log(`# skipping the demo's host sysctls test: ${skip}`);

const helpers = join(repoRoot, 'test', 'support', 'host-sysctls.ts');

/** Runs `argv` in the network namespace at `netnsPath` (only the network namespace: mounts stay the machine's). */
function run(argv: readonly string[], netnsPath?: string): { status: number | null; stdout: string; stderr: string } {
  const [file, args] =
    netnsPath === undefined ? [argv[0] ?? '', argv.slice(1)] : ['nsenter', [`--net=${netnsPath}`, '--', ...argv]];
  const result = spawnSync(file, args, { cwd: repoRoot, encoding: 'utf8', timeout: 120_000 });
  return {
    status: result.status,
    stdout: textOf(result.stdout),
    stderr: `${textOf(result.stderr)}${result.error?.message ?? ''}`,
  };
}

/** A command that could not be spawned has null output, whatever the types say. */
function textOf(output: string | null): string {
  return output ?? '';
}

/** The forwarding sysctls as a process in that namespace sees them. */
function forwardingIn(netnsPath: string): Forwarding {
  const code = `const { readForwarding } = await import(${JSON.stringify(helpers)}); console.log(JSON.stringify([...readForwarding()]));`;
  const out = run([embeddedNode, '--input-type=module', '-e', code], netnsPath);
  assert.equal(out.status, 0, out.stderr);
  return new Map(JSON.parse(out.stdout) as Array<[string, string]>);
}

/** scripts/demo.sh's last step (`npm run demo` minus set-up and build: the suite built dist/hereabouts). */
function demo(netnsPath?: string): void {
  requireBinary();
  const out = run([embeddedNode, join('scripts', 'demo.ts')], netnsPath);
  assert.equal(out.status, 0, `demo failed (${out.status}):\n${out.stdout}${out.stderr}`);
  assert.match(out.stdout, /mode: root, Debian bridge plugin in network namespaces/);
  assert.match(out.stdout, /demo finished/);
  // The demo puts back what changed and says so: that it had to is already a failure.
  assert.doesNotMatch(out.stderr, /put back/, out.stderr);
}

describe("the demo leaves the machine's forwarding sysctls as it found them", { skip }, () => {
  test('on this machine, as it is', () => {
    const before = readForwarding();
    assert.ok(before.has('net/ipv4/ip_forward'));
    demo();
    assert.deepEqual(forwardingChanges(before), []);
  });

  for (const value of ['0', '1']) {
    test(`on a machine whose forwarding is ${value === '0' ? 'off' : 'on'} (a namespace of ours, all switches ${value})`, () => {
      const machine = new Netns('hab-fwd');
      try {
        // Writing ip_forward and ipv6's all.forwarding sets default and every interface too.
        const set = `echo ${value} >/proc/sys/net/ipv4/ip_forward; [ ! -e /proc/sys/net/ipv6 ] || echo ${value} >/proc/sys/net/ipv6/conf/all/forwarding`;
        const wrote = run(['sh', '-c', set], machine.path);
        assert.equal(wrote.status, 0, wrote.stderr);
        const before = forwardingIn(machine.path);
        assert.equal(before.get('net/ipv4/ip_forward'), value);
        assert.deepEqual([...new Set(before.values())], [value], JSON.stringify([...before]));
        demo(machine.path);
        assert.deepEqual(forwardingChanges(before, forwardingIn(machine.path)), []);
      } finally {
        machine.delete();
      }
    });
  }

  test('Ctrl-C after the first ADD: the demo stops, removes its namespaces and leaves forwarding as it was', async () => {
    requireBinary();
    const machine = new Netns('hab-fwd');
    try {
      const wrote = run(['sh', '-c', 'echo 0 >/proc/sys/net/ipv4/ip_forward'], machine.path);
      assert.equal(wrote.status, 0, wrote.stderr);
      const before = forwardingIn(machine.path);
      // nsenter execs the demo: the signal reaches it, as a terminal's Ctrl-C would.
      const child = spawn('nsenter', [`--net=${machine.path}`, '--', embeddedNode, join('scripts', 'demo.ts')], {
        cwd: repoRoot,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (b: Buffer) => {
        stdout += b.toString();
        if (/^ADD +web-a .* ok/m.test(stdout) && child.signalCode === null) child.kill('SIGINT');
      });
      child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
      const [code] = (await once(child, 'close')) as [number | null];
      assert.equal(code, 130, stdout + stderr);
      assert.match(stderr, /demo interrupted \(SIGINT\)/);
      assert.doesNotMatch(stdout, /demo finished/);
      assert.deepEqual(
        readdirSync('/var/run/netns').filter((n) => n.startsWith('hab-demo-')),
        [],
      );
      assert.deepEqual(forwardingChanges(before, forwardingIn(machine.path)), []);
    } finally {
      machine.delete();
    }
  });
});
