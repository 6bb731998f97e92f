// The host paths a plugin process on the node reads or writes when its config names nothing else, taken from the code
// that searches them, and the check that the node DaemonSet's container (the node agent, which runs the same calls)
// sees each one as the host's own path at the same place (DESIGN §9, "Agent and plugin see one node").
import assert from 'node:assert/strict';
import { dirname, join } from 'node:path';
import { FLAT_FILE_PATHS } from '../../../src/config/flatfile.ts';
import { DEFAULT_CACHE_DIR, DEFAULT_DATA_DIR } from '../../../src/config/parse.ts';
import { DEFAULT_POLICY, INSTALLER_DIRS } from '../../../src/config/trust.ts';
import { DEFAULT_CONFIG_DIRS, NODE_NAME_FILE } from '../../../src/store/kubernetes/node-name.ts';
import { DEFAULT_STATS_DIR } from '../../../src/cni/call-record.ts';
import { DEFAULT_AGENT_SOCKET } from '../../../src/agent/default-socket.ts';

/** In the order the plugin searches them: flat files, nodename files, then the kubeconfig, data, log and stats dirs. */
export function pluginHostPaths(): string[] {
  return [
    ...FLAT_FILE_PATHS,
    ...DEFAULT_CONFIG_DIRS.map((dir) => join(dir, NODE_NAME_FILE)),
    ...INSTALLER_DIRS,
    ...DEFAULT_POLICY.config,
    DEFAULT_DATA_DIR,
    DEFAULT_CACHE_DIR,
    ...DEFAULT_POLICY.data,
    ...DEFAULT_POLICY.log,
    DEFAULT_STATS_DIR,
    dirname(DEFAULT_AGENT_SOCKET),
  ];
}

interface Mount {
  readonly name: string;
  readonly mountPath: string;
}
export interface NodePodSpec {
  readonly hostNetwork?: boolean;
  readonly containers: ReadonlyArray<{ readonly volumeMounts?: readonly Mount[] }>;
  readonly volumes?: ReadonlyArray<{ readonly name: string; readonly hostPath?: { readonly path: string } }>;
}

/** Every plugin path lies under a mount of the host's path of the same name (the deepest mount above it decides). */
export function assertAgentSeesHostPaths(spec: NodePodSpec): void {
  const [container] = spec.containers;
  const mounts = container?.volumeMounts ?? [];
  for (const path of pluginHostPaths()) {
    const covering = mounts
      .filter((m) => path === m.mountPath || path.startsWith(`${m.mountPath.replace(/\/$/, '')}/`))
      .sort((a, b) => b.mountPath.length - a.mountPath.length)[0];
    assert.ok(covering !== undefined, `${path}: not mounted in the node container, which would see the image's files`);
    const hostPath = spec.volumes?.find((v) => v.name === covering.name)?.hostPath?.path;
    assert.equal(hostPath, covering.mountPath, `${path}: mounted at ${covering.mountPath} from the host's ${String(hostPath)}`);
  }
  // The last step of the node-name search is the kernel's host name: the host's, through the host's UTS namespace.
  assert.equal(spec.hostNetwork, true, 'the host name is the host\'s (hostNetwork shares the UTS namespace)');
}
