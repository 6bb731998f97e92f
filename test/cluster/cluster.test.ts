// hereabouts the way operators run it: `kubectl apply -k deploy/` on a real node (kubelet + containerd + Multus),
// the installer and the controller from the image, pods on a macvlan NAD ("type": "hereabouts") and a bridge NAD
// ("type": "whereabouts", node_slice_size) asking for addresses through Multus. The tests run in order: each builds
// on the state the previous one left (the cluster is expensive; one per run).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from '../support/paths.ts';
import {
  allocations,
  apply,
  cluster,
  containerPid,
  getJson,
  inNetns,
  kubectl,
  kubectlAsync,
  kubectlWatch,
  networkStatus,
  nodeTokenStatus,
  podReady,
  stopCluster,
  until,
  type Cluster,
  type Pod,
} from './cluster.ts';

const NS = 'hab-cluster';
const BUSYBOX = 'hereabouts.local/busybox:1.35';
const MACVLAN_RANGE = '10.235.1.0/24';
const BRIDGE_RANGE = '10.235.16.0/20';

function nad(name: string, config: Record<string, unknown>): unknown {
  return {
    apiVersion: 'k8s.cni.cncf.io/v1',
    kind: 'NetworkAttachmentDefinition',
    metadata: { name, namespace: NS },
    spec: { config: JSON.stringify({ cniVersion: '0.3.1', name, ...config }) },
  };
}

function workload(name: string): unknown {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: NS, annotations: { 'k8s.v1.cni.cncf.io/networks': 'mvl,brg' } },
    spec: {
      terminationGracePeriodSeconds: 1,
      containers: [{ name: 'main', image: BUSYBOX, imagePullPolicy: 'Never', command: ['/bin/sleep', '100000'] }],
    },
  };
}

describe('a real single-node cluster', () => {
  let c: Cluster;
  const pod = (name: string): Pod => getJson(c, ['-n', NS, 'pod', name]) as Pod;
  const podsOf = (selector: string): Pod[] =>
    (getJson(c, ['-n', 'kube-system', 'pods', '-l', selector]) as { items: Pod[] }).items;
  const ipsOn = (p: Pod, network: string): string[] =>
    networkStatus(p).find((s) => s.name === `${NS}/${network}`)?.ips ?? [];
  const readyPod = (name: string, ms = 120_000): Promise<Pod> =>
    until(`pod ${name} Ready`, ms, () => {
      const p = pod(name);
      return podReady(p) ? p : undefined;
    });
  const mine = (podName: string): ReturnType<typeof allocations> =>
    allocations(c).filter((a) => a.podref === `${NS}/${podName}`);

  /** An operator's knob: one more flag on the controller's command line, rolled out. */
  const controllerFlag = (flag: string): void => {
    const patch = [{ op: 'add', path: '/spec/template/spec/containers/0/command/-', value: flag }];
    kubectl(c, [
      '-n',
      'kube-system',
      'patch',
      'deployment',
      'hereabouts-controller',
      '--type=json',
      '-p',
      JSON.stringify(patch),
    ]);
    kubectl(c, ['-n', 'kube-system', 'rollout', 'status', 'deployment/hereabouts-controller', '--timeout=300s']);
  };

  before(() => {
    c = cluster();
    // Cluster API's IPAM CRDs, as the cluster-api Go module ships them (cached by the script), before the controller
    // starts: its IPAddressClaim informer then finds them at once.
    const capi = execFileSync(join(repoRoot, 'scripts/tools/capi-crds.sh'), { encoding: 'utf8' }).trim();
    kubectl(c, ['apply', '--server-side', '-f', capi]);
  });
  after(() => {
    stopCluster(c);
  });

  test('kubectl apply -k deploy/ installs the plugin on the node: binary, hard link, token, kubeconfig, flat config, nodename', async () => {
    kubectl(c, ['apply', '-k', join(repoRoot, 'deploy')]);
    kubectl(c, ['-n', 'kube-system', 'rollout', 'status', 'daemonset/hereabouts-node', '--timeout=180s']);
    const bin = join(c.hostRoot, 'opt/cni/bin');
    const conf = join(c.hostRoot, 'etc/cni/net.d/hereabouts.d');
    await until('the installer wrote nodename', 60_000, () =>
      statSync(join(conf, 'nodename'), { throwIfNoEntry: false }) === undefined ? undefined : true,
    );
    const here = statSync(join(bin, 'hereabouts'));
    assert.equal(here.mode & 0o777, 0o755);
    assert.equal(here.size, statSync(join(repoRoot, 'dist/hereabouts')).size);
    assert.equal(statSync(join(bin, 'whereabouts')).ino, here.ino, 'whereabouts is a hard link');
    assert.equal(statSync(conf).mode & 0o777, 0o700);
    for (const f of ['token', 'hereabouts.kubeconfig', 'hereabouts.conf', 'nodename'])
      assert.equal(statSync(join(conf, f)).mode & 0o777, 0o600, f);
    assert.equal(readFileSync(join(conf, 'nodename'), 'utf8'), `${c.nodeName}\n`);
    const kubeconfig = JSON.parse(readFileSync(join(conf, 'hereabouts.kubeconfig'), 'utf8')) as {
      clusters: Array<{ cluster: { server: string } }>;
    };
    assert.equal(kubeconfig.clusters[0]?.cluster.server, 'https://10.233.0.1:443');
  });

  test('the controller runs in-cluster with its ServiceAccount: both replicas Ready, one Lease holder among them', async () => {
    kubectl(c, ['-n', 'kube-system', 'rollout', 'status', 'deployment/hereabouts-controller', '--timeout=180s']);
    const pods = podsOf('app.kubernetes.io/component=controller');
    assert.equal(pods.filter(podReady).length, 2);
    const holder = await until('a lease holder', 60_000, () => {
      const lease = getJson(c, ['-n', 'kube-system', 'lease', 'hereabouts-controller']) as {
        spec: { holderIdentity?: string };
      };
      return lease.spec.holderIdentity || undefined;
    });
    assert.ok(
      pods.some((p) => p.metadata.name === holder),
      `holder ${holder} is one of ${pods.map((p) => p.metadata.name).join(', ')}`,
    );
    // The PodDisruptionBudget covers both replicas: a drain may evict one of them at a time.
    const budget = await until('the disruption budget to count both replicas', 60_000, () => {
      const pdb = getJson(c, ['-n', 'kube-system', 'pdb', 'hereabouts-controller']) as {
        status?: { currentHealthy?: number; disruptionsAllowed?: number };
      };
      return pdb.status?.currentHealthy === 2 ? pdb.status : undefined;
    });
    assert.equal(budget.disruptionsAllowed, 1);
  });

  test("leader failover: another replica takes the Lease when the leader's pod is deleted", async () => {
    const lease = (): string | undefined =>
      (getJson(c, ['-n', 'kube-system', 'lease', 'hereabouts-controller']) as { spec: { holderIdentity?: string } })
        .spec.holderIdentity || undefined;
    const first = lease();
    assert.ok(first !== undefined);
    const other = podsOf('app.kubernetes.io/component=controller').find((p) => p.metadata.name !== first);
    assert.ok(other, 'a standby replica');
    kubectl(c, ['-n', 'kube-system', 'delete', 'pod', first, '--wait=false']);
    // SIGTERM hands the lease back; the standby takes it at its next retry.
    const next = await until('a new lease holder', 60_000, () => {
      const holder = lease();
      return holder !== undefined && holder !== first ? holder : undefined;
    });
    // The standby, or the replacement the ReplicaSet started meanwhile (it may win the race): a live replica.
    assert.ok(
      podsOf('app.kubernetes.io/component=controller').some((p) => p.metadata.name === next),
      `holder ${next} is a controller pod`,
    );
    kubectl(c, ['-n', 'kube-system', 'rollout', 'status', 'deployment/hereabouts-controller', '--timeout=180s']);
  });

  test('pods on a macvlan NAD (hereabouts) and a bridge NAD (whereabouts, node_slice_size) get addresses and reach each other', async () => {
    kubectl(c, ['create', 'namespace', NS]);
    apply(c, [
      nad('mvl', {
        type: 'macvlan',
        master: 'hbc-mvl0',
        mode: 'bridge',
        ipam: { type: 'hereabouts', range: MACVLAN_RANGE },
      }),
      nad('brg', {
        type: 'bridge',
        bridge: 'hbc-br1',
        isGateway: false,
        ipMasq: false,
        ipam: { type: 'whereabouts', range: BRIDGE_RANGE, node_slice_size: '/24' },
      }),
    ]);
    // The controller gives the node its slice before the bridge network can allocate.
    await until('a node slice for brg', 60_000, () => {
      const pool = getJson(c, ['-n', 'kube-system', 'nodeslicepools.whereabouts.cni.cncf.io', 'brg']) as {
        status?: { allocations?: Array<{ nodeName: string; sliceRange: string }> };
      };
      return pool.status?.allocations?.find((a) => a.nodeName === c.nodeName);
    });
    apply(c, [workload('a'), workload('b')]);
    const [a, b] = [await readyPod('a'), await readyPod('b')];
    for (const p of [a, b]) {
      assert.equal(ipsOn(p, 'mvl').length, 1, JSON.stringify(networkStatus(p)));
      assert.equal(ipsOn(p, 'brg').length, 1, JSON.stringify(networkStatus(p)));
    }
    assert.match(ipsOn(a, 'mvl')[0]!, /^10\.235\.1\./);
    assert.match(ipsOn(a, 'brg')[0]!, /^10\.235\.(1[6-9]|2\d|3[01])\./);
    const pa = containerPid(c, a);
    for (const net of ['mvl', 'brg']) {
      const target = ipsOn(b, net)[0]!;
      const ping = inNetns(pa, ['ping', '-c', '1', '-W', '5', target]);
      assert.equal(ping.code, 0, `a -> b on ${net} (${target}):\n${ping.out}`);
    }
  });

  test("one allocation per pod per network, at the addresses Multus' network-status reports", () => {
    for (const name of ['a', 'b']) {
      const p = pod(name);
      const held = mine(name);
      const reported = ['mvl', 'brg'].map((net) => ipsOn(p, net)[0]).sort();
      assert.deepEqual(held.map((x) => x.ip).sort(), reported, JSON.stringify(held));
      assert.equal(held.filter((x) => x.pool === '10.235.1.0-24').length, 1, JSON.stringify(held));
    }
  });

  test("the node agent's warm sets: a new pod's address is in its IPPool record under its name within a second of its ADD", async () => {
    const macvlanPool = '10.235.1.0-24';
    // The id ends in the digest of the settings the agent claims with (src/store/warm-record.ts).
    const isWarm = (id: string): boolean => id.startsWith(`hereabouts-warm:${c.nodeName}/${macvlanPool}/`);
    // Pods a and b were served: the agent holds warm addresses in the macvlan pool once the controller allows them
    // (no Whereabouts component runs here).
    await until('a warm record in the macvlan pool', 60_000, () =>
      allocations(c).find((x) => x.pool === macvlanPool && isWarm(x.id)),
    );
    const warmBefore = new Set(
      allocations(c)
        .filter((x) => x.pool === macvlanPool && isWarm(x.id))
        .map((x) => x.ip),
    );
    const pool = kubectlWatch(
      c,
      ['-n', 'kube-system', 'ippools.whereabouts.cni.cncf.io', macvlanPool],
      '{.spec.allocations}',
    );
    // By field selector: the watch starts before the pod exists.
    const status = kubectlWatch(
      c,
      ['-n', NS, 'pods', '--field-selector', 'metadata.name=warm-a'],
      '{.metadata.annotations.k8s\\.v1\\.cni\\.cncf\\.io/network-status}',
    );
    try {
      apply(c, [workload('warm-a')]);
      const ip = ipsOn(await readyPod('warm-a'), 'mvl')[0];
      assert.ok(ip !== undefined);
      const offset = ip.split('.')[3] ?? '';
      const names = (text: string): boolean => {
        try {
          return (JSON.parse(text) as Record<string, { podref?: string }>)[offset]?.podref === `${NS}/warm-a`;
        } catch {
          return false; // not a whole allocations map
        }
      };
      // Multus writes the pod's network-status right after the ADDs answered: the ADD's time, as seen from here.
      const statusAt = await until(
        'the network-status with the address',
        10_000,
        () => status.lines.find((l) => l.text.includes(`"${ip}"`))?.at,
      );
      const recordAt = await until(
        'the record under the pod name',
        10_000,
        () => pool.lines.find((l) => names(l.text))?.at,
      );
      assert.ok(recordAt - statusAt <= 1_000, `the record named the pod ${recordAt - statusAt} ms after the ADD`);
      assert.ok(warmBefore.has(ip), `${ip} was one of the warm addresses ${[...warmBefore].join(', ')}`);
    } finally {
      pool.stop();
      status.stop();
      kubectl(c, ['-n', NS, 'delete', 'pod', 'warm-a', '--ignore-not-found', '--wait=true', '--timeout=120s']);
    }
  });

  test('a killed sandbox is re-created without a second allocation', async () => {
    const before = pod('a');
    const held = mine('a')
      .map((x) => `${x.pool}/${x.offset}`)
      .sort();
    // The sandbox's pause process: the one in the workload's network namespace.
    const netns = readlinkSync(`/proc/${containerPid(c, before)}/ns/net`);
    const pause = readdirSync('/proc')
      .filter((d) => /^\d+$/.test(d))
      .find((d) => {
        try {
          return (
            readFileSync(`/proc/${d}/comm`, 'utf8').trim() === 'pause' && readlinkSync(`/proc/${d}/ns/net`) === netns
          );
        } catch {
          return false; // exited while we looked
        }
      });
    assert.ok(pause !== undefined, 'found the pause process');
    process.kill(Number(pause), 'SIGKILL');
    const after = await until('pod a running again in a new sandbox', 120_000, () => {
      const p = pod('a');
      const restarted =
        (p.status.containerStatuses?.[0]?.restartCount ?? 0) >
        (before.status.containerStatuses?.[0]?.restartCount ?? 0);
      return restarted && podReady(p) ? p : undefined;
    });
    assert.deepEqual(
      mine('a')
        .map((x) => `${x.pool}/${x.offset}`)
        .sort(),
      held,
    );
    assert.equal(ipsOn(after, 'mvl')[0], ipsOn(before, 'mvl')[0]);
    assert.equal(ipsOn(after, 'brg')[0], ipsOn(before, 'brg')[0]);
  });

  test("graceful delete releases the pod's addresses on both networks", async () => {
    assert.equal(mine('b').length, 2);
    kubectl(c, ['-n', NS, 'delete', 'pod', 'b', '--wait=true', '--timeout=120s']);
    await until("b's allocations released", 30_000, () => (mine('b').length === 0 ? true : undefined));
  });

  test('an evicted pod keeps its addresses while it still runs in its grace period, and releases them once gone', async () => {
    // A container that ignores SIGTERM: the pod stays Terminating (and running) for its whole grace period.
    const spec = workload('ev') as {
      spec: { terminationGracePeriodSeconds: number; containers: Array<{ command: string[] }> };
    };
    spec.spec.terminationGracePeriodSeconds = 40;
    spec.spec.containers[0]!.command = ['/bin/sh', '-c', 'trap "" TERM; while true; do sleep 1; done'];
    apply(c, [spec]);
    await readyPod('ev');
    const held = mine('ev');
    assert.equal(held.length, 2);
    // The Eviction API, as `kubectl drain` uses it: DisruptionTarget=True (EvictionByEvictionAPI), then a graceful delete.
    const eviction = { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name: 'ev', namespace: NS } };
    kubectl(c, ['create', '--raw', `/api/v1/namespaces/${NS}/pods/ev/eviction`, '-f', '-'], JSON.stringify(eviction));
    const deadline = await until('ev terminating with DisruptionTarget', 30_000, () => {
      const p = pod('ev') as Pod & {
        metadata: { deletionTimestamp?: string };
        status: { conditions?: Array<{ type: string; status: string }> };
      };
      const disrupted = (p.status.conditions ?? []).some(
        (cond) => cond.type === 'DisruptionTarget' && cond.status === 'True',
      );
      return p.metadata.deletionTimestamp !== undefined && disrupted
        ? Date.parse(p.metadata.deletionTimestamp)
        : undefined;
    });
    // deletionTimestamp is when kubelet kills the container (eviction time + grace). Until a few seconds before it
    // the pod runs, and its addresses stay: the controller's pod watch acts within ~2 s of the change.
    let checks = 0;
    while (Date.now() < deadline - 5_000) {
      assert.deepEqual(
        mine('ev')
          .map((a) => a.ip)
          .sort(),
        held.map((a) => a.ip).sort(),
        'an evicted pod lost its addresses while it still ran',
      );
      checks++;
      await new Promise((r) => setTimeout(r, 1000));
    }
    assert.ok(checks >= 10, `only ${checks} checks inside the grace period`);
    await until("ev's allocations released", 60_000, () => (mine('ev').length === 0 ? true : undefined));
  });

  // While `during` runs: every 100 ms, the token the plugin would use right now must authenticate, and a pod is
  // created every 2 s; then every pod must be Ready, with no failed sandbox on the way.
  const noAddFails = async (prefix: string, during: () => Promise<void>): Promise<void> => {
    const names: string[] = [];
    const refused: string[] = [];
    let done = false as boolean; // set in the finally below while the loops run, not the constant false TypeScript assumes inside them
    const probing = (async () => {
      while (!done) {
        const status = await nodeTokenStatus(c).catch((err: unknown) => String(err));
        if (status !== 201) refused.push(`${new Date().toISOString()} ${status}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    const creating = (async () => {
      while (!done || names.length < 3) {
        const name = `${prefix}${names.length}`;
        await kubectlAsync(c, [
          'run',
          name,
          '-n',
          NS,
          `--image=${BUSYBOX}`,
          '--image-pull-policy=Never',
          '--restart=Never',
          '--annotations=k8s.v1.cni.cncf.io/networks=mvl,brg',
          '--command',
          '--',
          '/bin/sleep',
          '100000',
        ]);
        names.push(name);
        await new Promise((r) => setTimeout(r, 2000));
      }
    })();
    try {
      await during();
    } finally {
      done = true;
      await Promise.all([creating, probing]);
    }
    assert.deepEqual(refused, [], 'the token in hereabouts.d/token was refused');
    for (const name of names) await readyPod(name);
    const events = (
      getJson(c, ['-n', NS, 'events']) as {
        items: Array<{ reason: string; message: string; involvedObject: { name: string } }>;
      }
    ).items;
    const failed = events.filter((e) => names.includes(e.involvedObject.name) && e.reason === 'FailedCreatePodSandBox');
    assert.deepEqual(
      failed.map((e) => `${e.involvedObject.name}: ${e.message}`),
      [],
    );
    for (const name of names) assert.equal(mine(name).length, 2, name);
    kubectl(c, ['-n', NS, 'delete', 'pod', ...names, '--wait=true', '--timeout=120s']);
  };
  const installerPod = (): string =>
    podsOf('app.kubernetes.io/component=node')
      .map((p) => p.metadata.name)
      .join(',');

  test("a rolling update of the DaemonSet fails no ADD (the new installer's token is written before the old one dies)", async () => {
    const old = installerPod();
    await noAddFails('r', async () => {
      await kubectlAsync(c, ['-n', 'kube-system', 'rollout', 'restart', 'daemonset/hereabouts-node']);
      await kubectlAsync(c, ['-n', 'kube-system', 'rollout', 'status', 'daemonset/hereabouts-node', '--timeout=180s']);
    });
    assert.notEqual(installerPod(), old);
  });

  test('token rotation by deleting the installer pod fails no ADD', async () => {
    const old = installerPod();
    await noAddFails('t', async () => {
      await kubectlAsync(c, ['-n', 'kube-system', 'delete', 'pod', old, '--wait=true']);
      await kubectlAsync(c, ['-n', 'kube-system', 'rollout', 'status', 'daemonset/hereabouts-node', '--timeout=180s']);
      await new Promise((r) => setTimeout(r, 4000));
    });
  });

  test('a pod force-deleted while kubelet is stopped is cleaned by the controller, and the late DEL is harmless', async () => {
    // An operator's knob: the controller leaves allocations younger than --pending-grace (5m) alone.
    controllerFlag('--pending-grace=3s');
    apply(c, [workload('f')]);
    await readyPod('f');
    const others = mine('a')
      .map((x) => x.ip)
      .sort();
    assert.equal(mine('f').length, 2);
    const kubelet = Number(readFileSync(join(c.dir, 'kubelet.pid'), 'utf8'));
    process.kill(kubelet, 'SIGSTOP');
    try {
      kubectl(c, ['-n', NS, 'delete', 'pod', 'f', '--grace-period=0', '--force']);
      await until("the controller released f's allocations", 30_000, () => (mine('f').length === 0 ? true : undefined));
    } finally {
      process.kill(kubelet, 'SIGCONT');
    }
    // kubelet now stops the sandbox: CNI DEL for an allocation that is already gone.
    // kubelet's housekeeping of a deleted pod's sandbox may take minutes on a busy node.
    await until("f's sandbox gone from the node", 180_000, () => {
      const out = execFileSync(
        'ctr',
        ['--address', c.containerdSocket, '-n', 'k8s.io', 'containers', 'ls', 'labels.io.kubernetes.pod.name==f'],
        { encoding: 'utf8' },
      );
      return out.trim().split('\n').length <= 1 ? true : undefined;
    });
    assert.equal(mine('f').length, 0);
    assert.deepEqual(
      mine('a')
        .map((x) => x.ip)
        .sort(),
      others,
      "a's addresses untouched",
    );
  });

  test('a pool Whereabouts left (its shape, an address held by a running pod) is honoured after the switch', async () => {
    // A pod Whereabouts gave 10.235.3.1 on network wb: its Multus network-status says so, and so does the pool.
    apply(c, [
      {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'w', namespace: NS },
        spec: {
          terminationGracePeriodSeconds: 1,
          containers: [{ name: 'main', image: BUSYBOX, imagePullPolicy: 'Never', command: ['/bin/sleep', '100000'] }],
        },
      },
    ]);
    const w = await readyPod('w');
    const status = [...networkStatus(w), { name: `${NS}/wb`, interface: 'net1', ips: ['10.235.3.1'] }];
    kubectl(c, [
      '-n',
      NS,
      'annotate',
      '--overwrite',
      'pod',
      'w',
      `k8s.v1.cni.cncf.io/network-status=${JSON.stringify(status)}`,
    ]);
    apply(c, [
      {
        apiVersion: 'whereabouts.cni.cncf.io/v1alpha1',
        kind: 'IPPool',
        metadata: { name: '10.235.3.0-24', namespace: 'kube-system' },
        spec: {
          range: '10.235.3.0/24',
          allocations: { '1': { id: 'whereabouts-era-container', podref: `${NS}/w`, ifname: 'net1' } },
        },
      },
      nad('wb', {
        type: 'bridge',
        bridge: 'hbc-br1',
        isGateway: false,
        ipMasq: false,
        ipam: { type: 'whereabouts', range: '10.235.3.0/24' },
      }),
    ]);
    apply(c, [
      {
        ...(workload('x') as { metadata: Record<string, unknown> }),
        metadata: { name: 'x', namespace: NS, annotations: { 'k8s.v1.cni.cncf.io/networks': 'wb' } },
      },
    ]);
    const x = await readyPod('x');
    assert.deepEqual(ipsOn(x, 'wb'), ['10.235.3.2']);
    assert.deepEqual(
      mine('w').map((a) => a.ip),
      ['10.235.3.1'],
      'the Whereabouts-era allocation is still there',
    );
  });

  test("the DaemonSet's node agent served the pods' calls, as its /metrics on the node shows", async () => {
    // Host network: the installer's --metrics-addr=:9546 is the node's port. Counters start with the pod; pods were
    // created since the last installer restart (the token-rotation test), so their ADDs went through this agent.
    const text = await (await fetch('http://127.0.0.1:9546/metrics')).text();
    const value = (series: string): number =>
      Number(
        text
          .split('\n')
          .find((l) => l.startsWith(`${series} `))
          ?.split(' ')[1] ?? NaN,
      );
    assert.equal(value('hereabouts_node_agent_up'), 1, text);
    assert.ok(value('hereabouts_node_agent_calls_total{result="answered"}') > 0, text);
    assert.equal(value('hereabouts_node_agent_calls_total{result="deadline"}'), 0);
    const adds = text.split('\n').filter((l) => l.startsWith('hereabouts_cni_requests_total{verb="ADD",code="ok"'));
    assert.ok(adds.length > 0 && adds.every((l) => Number(l.split(' ')[1]) > 0), text);
  });

  test("a Cluster API IPAddressClaim on a pods' network: its address is no pod's, and a pod gets it once the claim is deleted", async () => {
    const X = '10.235.1.200';
    apply(c, [
      // The same network as mvl (its range, so its IPPool), where a pod may ask for an address (Multus' "ips").
      nad('mvl-ips', {
        type: 'macvlan',
        master: 'hbc-mvl0',
        mode: 'bridge',
        capabilities: { ips: true },
        ipam: { type: 'hereabouts', range: MACVLAN_RANGE },
      }),
      {
        apiVersion: 'hereabouts.cni.cncf.io/v1alpha1',
        kind: 'AddressPool',
        metadata: { name: 'machines', namespace: NS },
        spec: { network: { nad: { name: 'mvl' } }, addresses: [`${X}-10.235.1.209`] },
      },
      {
        apiVersion: 'ipam.cluster.x-k8s.io/v1beta2',
        kind: 'IPAddressClaim',
        metadata: { name: 'machine-0', namespace: NS },
        spec: { poolRef: { apiGroup: 'hereabouts.cni.cncf.io', kind: 'AddressPool', name: 'machines' } },
      },
    ]);
    type Claim = { status?: { addressRef?: { name: string }; conditions?: Array<{ type: string; status: string }> } };
    await until('IPAddressClaim machine-0 Ready', 120_000, () => {
      const claim = getJson(c, ['-n', NS, 'ipaddressclaims.ipam.cluster.x-k8s.io', 'machine-0']) as Claim;
      return claim.status?.conditions?.some((x) => x.type === 'Ready' && x.status === 'True') === true
        ? true
        : undefined;
    });
    const address = getJson(c, ['-n', NS, 'ipaddresses.ipam.cluster.x-k8s.io', 'machine-0']) as {
      spec: { address: string; prefix: number };
    };
    assert.deepEqual([address.spec.address, address.spec.prefix], [X, 24]);
    const held = allocations(c).filter((a) => a.ip === X);
    assert.deepEqual(
      held.map((a) => [a.pool, a.id, a.podref]),
      [['10.235.1.0-24', `hereabouts-claim:${NS}/machine-0`, '']],
    );
    // No pod holds it: every pod's mvl address is another.
    const pods = (getJson(c, ['-n', NS, 'pods']) as { items: Pod[] }).items;
    for (const p of pods) assert.ok(!ipsOn(p, 'mvl').includes(X), `${p.metadata.name} has ${X}`);
    // A pod that asks for it cannot have it while the claim holds it: its ADD fails, and the claim keeps it.
    const wantsX = (name: string): unknown => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name,
        namespace: NS,
        annotations: { 'k8s.v1.cni.cncf.io/networks': JSON.stringify([{ name: 'mvl-ips', ips: [`${X}/24`] }]) },
      },
      spec: {
        terminationGracePeriodSeconds: 1,
        containers: [{ name: 'main', image: BUSYBOX, imagePullPolicy: 'Never', command: ['/bin/sleep', '100000'] }],
      },
    });
    apply(c, [wantsX('wants-x')]);
    await until('a failed sandbox of wants-x naming the address', 90_000, () => {
      const events = getJson(c, ['-n', NS, 'events', '--field-selector', 'involvedObject.name=wants-x']) as {
        items: Array<{ reason: string; message: string }>;
      };
      return events.items.some((e) => e.reason === 'FailedCreatePodSandBox' && e.message.includes(X))
        ? true
        : undefined;
    });
    assert.equal(podReady(pod('wants-x')), false);
    assert.deepEqual(
      allocations(c)
        .filter((a) => a.ip === X)
        .map((a) => a.id),
      [`hereabouts-claim:${NS}/machine-0`],
    );
    kubectl(c, ['-n', NS, 'delete', 'pod', 'wants-x', '--wait=true']);
    // The claim goes: its IPAddress first, then its address, then its finalizer.
    kubectl(c, [
      '-n',
      NS,
      'delete',
      'ipaddressclaims.ipam.cluster.x-k8s.io',
      'machine-0',
      '--wait=true',
      '--timeout=120s',
    ]);
    assert.equal(allocations(c).filter((a) => a.ip === X).length, 0);
    assert.match(
      kubectl(c, ['-n', NS, 'get', 'ipaddresses.ipam.cluster.x-k8s.io', '--ignore-not-found', '-o', 'name']),
      /^$/,
    );
    apply(c, [wantsX('gets-x')]);
    const p = await readyPod('gets-x');
    assert.deepEqual(ipsOn(p, 'mvl-ips'), [X]);
    kubectl(c, ['-n', NS, 'delete', 'pod', 'gets-x', '--wait=true']);
  });

  test('sticky addresses: a StatefulSet replica comes back with its address (pod deleted, rolling update); scaling down releases the highest ordinal after the grace; another set cannot take a bound address', async () => {
    const STICKY_RANGE = '10.235.2.0/24';
    const stickyPool = '10.235.2.0-24';
    // The node's pod-reading role (opt-in: docs/sticky.md), and the controller's grace shortened for the test.
    kubectl(c, ['apply', '-k', join(repoRoot, 'deploy/sticky')]);
    controllerFlag('--sticky-grace=5s');
    const set = (name: string, replicas: number, annotations: Record<string, string> = {}): unknown => ({
      apiVersion: 'apps/v1',
      kind: 'StatefulSet',
      metadata: { name, namespace: NS, annotations },
      spec: {
        replicas,
        serviceName: name,
        podManagementPolicy: 'Parallel',
        selector: { matchLabels: { app: name } },
        template: {
          metadata: { labels: { app: name }, annotations: { 'k8s.v1.cni.cncf.io/networks': 'mvl-sticky' } },
          spec: {
            terminationGracePeriodSeconds: 1,
            containers: [{ name: 'main', image: BUSYBOX, imagePullPolicy: 'Never', command: ['/bin/sleep', '100000'] }],
          },
        },
      },
    });
    apply(c, [
      nad('mvl-sticky', {
        type: 'macvlan',
        master: 'hbc-mvl0',
        mode: 'bridge',
        ipam: { type: 'hereabouts', range: STICKY_RANGE, sticky: true },
      }),
      set('web', 2),
    ]);
    const uidOf = (p: Pod): string => (p as unknown as { metadata: { uid: string } }).metadata.uid;
    /** The replica Ready under another uid than `before` (re-created), and its address on mvl-sticky. */
    const readyAgain = (name: string, before: string | undefined): Promise<Pod> =>
      until(`${name} Ready${before === undefined ? '' : ' again'}`, 180_000, () => {
        const p = getJson(c, ['-n', NS, 'pod', name, '--ignore-not-found']) as Pod | '';
        return p !== '' && podReady(p) && uidOf(p) !== before ? p : undefined;
      });
    const [w0, w1] = [await readyAgain('web-0', undefined), await readyAgain('web-1', undefined)];
    const [a0, a1] = [ipsOn(w0, 'mvl-sticky')[0]!, ipsOn(w1, 'mvl-sticky')[0]!];
    const bound = (ip: string): string | undefined =>
      allocations(c).find((x) => x.pool === stickyPool && x.ip === ip)?.binding;
    assert.equal(bound(a0), 'StatefulSet/web/0');
    assert.equal(bound(a1), 'StatefulSet/web/1');

    // The pod deleted: the StatefulSet controller re-creates it, and it comes back with its address.
    kubectl(c, ['-n', NS, 'delete', 'pod', 'web-0', '--wait=true']);
    const w0b = await readyAgain('web-0', uidOf(w0));
    assert.deepEqual(ipsOn(w0b, 'mvl-sticky'), [a0]);

    // A rolling update re-creates every replica, highest ordinal first: each one keeps its address.
    kubectl(c, [
      '-n',
      NS,
      'patch',
      'statefulset',
      'web',
      '--type=merge',
      '-p',
      JSON.stringify({ spec: { template: { metadata: { annotations: { 'hereabouts.test/rollout': '1' } } } } }),
    ]);
    kubectl(c, ['-n', NS, 'rollout', 'status', 'statefulset/web', '--timeout=300s']);
    const [w0c, w1c] = [await readyAgain('web-0', uidOf(w0b)), await readyAgain('web-1', uidOf(w1))];
    assert.deepEqual([ipsOn(w0c, 'mvl-sticky'), ipsOn(w1c, 'mvl-sticky')], [[a0], [a1]]);
    assert.equal(allocations(c).filter((x) => x.binding?.startsWith('StatefulSet/web/') === true).length, 2);

    // Another set that declares web-0's address gets a Warning Event and an address of its own.
    apply(c, [set('other', 1, { 'hereabouts.cni.cncf.io/sticky-addresses': JSON.stringify({ 'mvl-sticky': [a0] }) })]);
    const other = await readyAgain('other-0', undefined);
    assert.equal(ipsOn(other, 'mvl-sticky').length, 1);
    assert.notEqual(ipsOn(other, 'mvl-sticky')[0], a0);
    await until('the StickyAddressRefused Event on other', 60_000, () =>
      /StickyAddressRefused.*held by StatefulSet\/web\/0/.test(
        kubectl(c, [
          '-n',
          NS,
          'get',
          'events',
          '--field-selector',
          'involvedObject.name=other',
          '-o',
          'custom-columns=R:.reason,M:.message',
        ]).replace(/\s+/g, ' '),
      )
        ? true
        : undefined,
    );
    assert.equal(bound(a0), 'StatefulSet/web/0');

    // Scaled to one replica: web-1 goes, its address stays bound for the grace, then is released; web-0 keeps its own.
    kubectl(c, ['-n', NS, 'scale', 'statefulset', 'web', '--replicas=1']);
    await until('web-1 gone', 120_000, () =>
      kubectl(c, ['-n', NS, 'get', 'pod', 'web-1', '--ignore-not-found', '-o', 'name']).trim() === ''
        ? true
        : undefined,
    );
    const goneAt = Date.now();
    assert.equal(bound(a1), 'StatefulSet/web/1', 'held right after the replica went');
    await until("web-1's address released", 120_000, () => (bound(a1) === undefined ? true : undefined));
    assert.ok(Date.now() - goneAt >= 3_000, 'not released before the grace');
    assert.equal(bound(a0), 'StatefulSet/web/0');
    kubectl(c, ['-n', NS, 'delete', 'statefulset', 'other', '--wait=true']);
  });

  test('hereabouts status shows the truth: every allocation counted, none orphaned', () => {
    const held = allocations(c);
    const report = JSON.parse(
      execFileSync(
        join(repoRoot, 'dist/hereabouts'),
        ['status', '--kubeconfig', c.kubeconfig, '-n', 'kube-system', '-o', 'json'],
        { encoding: 'utf8' },
      ),
    ) as { pools: Array<{ name: string; used: number; orphans: number | null }> };
    const pools = new Set(held.map((x) => x.pool));
    assert.ok(pools.size >= 2, JSON.stringify(held));
    for (const name of pools) {
      const row = report.pools.find((p) => p.name === name);
      assert.ok(row, `${name} in ${JSON.stringify(report)}`);
      assert.equal(row.used, held.filter((x) => x.pool === name).length, name);
      assert.equal(row.orphans, 0, name);
    }
  });
});
