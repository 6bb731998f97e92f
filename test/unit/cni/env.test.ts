import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readCniEnv, splitCniPath, validateContainerId, validateIfname, type EnvSource } from '../../../src/cni/env.ts';
import { CniError } from '../../../src/cni/errors.ts';
import { cniError } from '../../support/cni-error.ts';

const full: EnvSource = {
  CNI_CONTAINERID: 'abc123',
  CNI_NETNS: '/var/run/netns/pod1',
  CNI_IFNAME: 'net1',
  CNI_PATH: '/opt/cni/bin:/usr/lib/cni',
  CNI_ARGS: 'IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0',
};

const envError = (pattern: RegExp) => cniError(4, pattern);

function without(env: EnvSource, name: string): EnvSource {
  return Object.fromEntries(Object.entries(env).filter(([key]) => key !== name));
}

const requirements: Record<string, readonly string[]> = {
  ADD: ['CNI_CONTAINERID', 'CNI_NETNS', 'CNI_IFNAME'],
  CHECK: ['CNI_CONTAINERID', 'CNI_NETNS', 'CNI_IFNAME'],
  DEL: ['CNI_CONTAINERID', 'CNI_IFNAME'],
  GC: ['CNI_PATH'],
};

for (const [verb, names] of Object.entries(requirements)) {
  for (const name of names) {
    test(`readCniEnv() rejects ${verb} without ${name} (code 4, names it)`, () => {
      assert.throws(
        () => readCniEnv({ ...without(full, name), CNI_COMMAND: verb }),
        envError(new RegExp(`^${name} is required for ${verb}$`)),
      );
    });
    test(`readCniEnv() rejects ${verb} with an empty ${name}`, () => {
      assert.throws(
        () => readCniEnv({ ...full, [name]: '', CNI_COMMAND: verb }),
        envError(new RegExp(`${name} is required for ${verb}`)),
      );
    });
  }
}

test('readCniEnv() names every missing variable at once', () => {
  assert.throws(
    () => readCniEnv({ CNI_COMMAND: 'ADD', CNI_NETNS: '/x' }),
    envError(/^CNI_CONTAINERID, CNI_IFNAME are required for ADD$/),
  );
});

test('readCniEnv() does not require CNI_PATH for ADD (the spec lists it as optional)', () => {
  const env = readCniEnv({ ...without(full, 'CNI_PATH'), CNI_COMMAND: 'ADD' });
  assert.equal(env.verb, 'ADD');
  assert.equal(env.path.length, 0);
});

test('readCniEnv() does not require CNI_NETNS for DEL', () => {
  const env = readCniEnv({ ...without(full, 'CNI_NETNS'), CNI_COMMAND: 'DEL' });
  assert.equal(env.verb, 'DEL');
  assert.equal('netns' in env, false);
});

test('readCniEnv() treats an empty CNI_NETNS on DEL as absent', () => {
  const env = readCniEnv({ ...full, CNI_NETNS: '', CNI_COMMAND: 'DEL' });
  assert.ok(env.verb === 'DEL');
  assert.equal(env.netns, undefined);
});

test('readCniEnv() keeps CNI_NETNS on DEL when given', () => {
  const env = readCniEnv({ ...full, CNI_COMMAND: 'DEL' });
  assert.ok(env.verb === 'DEL');
  assert.equal(env.netns, '/var/run/netns/pod1');
});

test('readCniEnv() returns the ADD attachment', () => {
  const env = readCniEnv({ ...full, CNI_COMMAND: 'ADD' });
  assert.ok(env.verb === 'ADD');
  assert.equal(env.containerId, 'abc123');
  assert.equal(env.netns, '/var/run/netns/pod1');
  assert.equal(env.ifname, 'net1');
  assert.deepEqual(env.path, ['/opt/cni/bin', '/usr/lib/cni']);
  assert.equal(env.args.podNamespace, 'default');
  assert.equal(env.args.podName, 'web-0');
});

test('readCniEnv() returns the CHECK attachment', () => {
  const env = readCniEnv({ ...full, CNI_COMMAND: 'CHECK' });
  assert.ok(env.verb === 'CHECK');
  assert.equal(env.containerId, 'abc123');
  assert.equal(env.netns, '/var/run/netns/pod1');
});

test('readCniEnv() needs nothing but CNI_COMMAND for VERSION', () => {
  assert.deepEqual(readCniEnv({ CNI_COMMAND: 'VERSION' }), { verb: 'VERSION' });
});

test('readCniEnv() needs nothing but CNI_COMMAND for STATUS', () => {
  assert.deepEqual(readCniEnv({ CNI_COMMAND: 'STATUS' }), { verb: 'STATUS', path: [] });
});

test('readCniEnv() returns the GC path', () => {
  assert.deepEqual(readCniEnv({ CNI_COMMAND: 'GC', CNI_PATH: '/opt/cni/bin' }), {
    verb: 'GC',
    path: ['/opt/cni/bin'],
  });
});

test('readCniEnv() ignores attachment variables on GC, even invalid ones', () => {
  const env = readCniEnv({ CNI_COMMAND: 'GC', CNI_PATH: '/opt/cni/bin', CNI_CONTAINERID: 'bad/id', CNI_ARGS: 'x' });
  assert.equal(env.verb, 'GC');
});

test('readCniEnv() ignores a malformed CNI_ARGS on VERSION', () => {
  assert.deepEqual(readCniEnv({ CNI_COMMAND: 'VERSION', CNI_ARGS: 'garbage' }), { verb: 'VERSION' });
});

test('readCniEnv() rejects a missing CNI_COMMAND', () => {
  assert.throws(() => readCniEnv({ ...full }), envError(/^CNI_COMMAND is required$/));
});

test('readCniEnv() rejects an empty CNI_COMMAND', () => {
  assert.throws(() => readCniEnv({ ...full, CNI_COMMAND: '' }), envError(/CNI_COMMAND is required/));
});

test('readCniEnv() rejects an unknown CNI_COMMAND, naming it', () => {
  assert.throws(
    () => readCniEnv({ ...full, CNI_COMMAND: 'FROB' }),
    envError(/^CNI_COMMAND "FROB" is not one of ADD, DEL, CHECK, GC, STATUS, VERSION$/),
  );
});

test('readCniEnv() rejects a lower-case verb (verbs are case-sensitive)', () => {
  assert.throws(() => readCniEnv({ ...full, CNI_COMMAND: 'add' }), envError(/CNI_COMMAND "add"/));
});

test('readCniEnv() rejects an invalid container id on ADD, naming variable and value', () => {
  assert.throws(
    () => readCniEnv({ ...full, CNI_CONTAINERID: 'a/b', CNI_COMMAND: 'ADD' }),
    envError(/^CNI_CONTAINERID "a\/b" is invalid/),
  );
});

test('readCniEnv() rejects an invalid ifname on DEL, naming variable and value', () => {
  assert.throws(
    () => readCniEnv({ ...full, CNI_IFNAME: 'eth 0', CNI_COMMAND: 'DEL' }),
    envError(/^CNI_IFNAME "eth 0"/),
  );
});

test('readCniEnv() rejects a malformed CNI_ARGS on ADD', () => {
  assert.throws(() => readCniEnv({ ...full, CNI_ARGS: 'novalue', CNI_COMMAND: 'ADD' }), envError(/CNI_ARGS/));
});

test('readCniEnv() reads process.env by default', () => {
  const saved = process.env['CNI_COMMAND'];
  process.env['CNI_COMMAND'] = 'VERSION';
  try {
    assert.deepEqual(readCniEnv(), { verb: 'VERSION' });
  } finally {
    if (saved === undefined) delete process.env['CNI_COMMAND'];
    else process.env['CNI_COMMAND'] = saved;
  }
});

for (const id of [
  'a',
  'A',
  '0',
  'abc123',
  'a_b',
  'a.b',
  'a-b',
  '3f6940ab5ab43bc522569d15b23f8c1bbde1d7678b080398506924fc01d72755',
]) {
  test(`validateContainerId() accepts ${JSON.stringify(id)}`, () => {
    assert.equal(validateContainerId(id), id);
  });
}

for (const id of ['_a', '.a', '-a', 'a/b', 'a b', 'a:b', 'ä', 'a\nb', '../etc']) {
  test(`validateContainerId() rejects ${JSON.stringify(id)} with code 4`, () => {
    assert.throws(() => validateContainerId(id), envError(/^CNI_CONTAINERID .* is invalid/));
  });
}

test('validateContainerId() rejects an empty id as invalid (readCniEnv says it is required before)', () => {
  assert.throws(() => validateContainerId(''), envError(/^CNI_CONTAINERID "" is invalid/));
  assert.throws(
    () => readCniEnv({ ...full, CNI_CONTAINERID: '', CNI_COMMAND: 'ADD' }),
    envError(/^CNI_CONTAINERID is required for ADD$/),
  );
});

test('validateContainerId() caps a huge value in the message', () => {
  const id = `/${'x'.repeat(5000)}`;
  assert.throws(
    () => validateContainerId(id),
    (err: unknown) => err instanceof CniError && err.message.length < 300 && err.message.includes('…'),
  );
});

for (const name of ['eth0', 'net1', 'a', 'x'.repeat(15), 'eth0.100', 'veth-a_b']) {
  test(`validateIfname() accepts ${JSON.stringify(name)}`, () => {
    assert.equal(validateIfname(name), name);
  });
}

for (const [name, why] of [
  ['x'.repeat(16), /longer than 15 bytes/],
  ['éééééééé', /longer than 15 bytes/],
  ['.', /not a valid interface name/],
  ['..', /not a valid interface name/],
  ['eth/0', /must not contain/],
  ['eth:0', /must not contain/],
  ['eth 0', /must not contain/],
  ['eth\t0', /must not contain/],
  ['eth0\n', /must not contain/],
] as const) {
  test(`validateIfname() rejects ${JSON.stringify(name)} with code 4`, () => {
    assert.throws(() => validateIfname(name), envError(why));
  });
}

test('validateIfname() rejects an empty name', () => {
  assert.throws(() => validateIfname(''), envError(/CNI_IFNAME is empty/));
});

test('splitCniPath() drops empty entries', () => {
  assert.deepEqual(splitCniPath('/a::/b:'), ['/a', '/b']);
});

test('splitCniPath() of undefined is empty', () => {
  assert.deepEqual(splitCniPath(undefined), []);
});
