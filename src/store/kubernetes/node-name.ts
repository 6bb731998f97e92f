// The Kubernetes node this plugin runs on: it picks the node's slice and marks the allocations GC may touch. Same
// order as Whereabouts (getNodeName): the NODENAME environment variable, then a `nodename` file in the
// configuration directory (written by the installer from the downward API), then the kernel's host name (as kubelet's
// default node name), never /etc/hostname: in the node agent's pod that file is the runtime's, while the host name is
// the host's (hostNetwork shares the UTS namespace). Every file searched here is mounted in the agent's container at
// the same path (deploy/daemonset.yaml; test/integration/deploy/host-paths.ts).
import { readFileSync, statSync } from 'node:fs';
import { hostname } from 'node:os';
import { dirname, join } from 'node:path';
import { ErrorKind, HereaboutsError } from '../../errors.ts';
import { messageOf } from '../../errors.ts';
import { errnoOf } from '../../fs/unsafe-file.ts';

/** Where the installers (Whereabouts' and ours) put the flat config and the nodename file. */
export const DEFAULT_CONFIG_DIRS: readonly string[] = [
  '/etc/kubernetes/cni/net.d/whereabouts.d',
  '/etc/cni/net.d/whereabouts.d',
  '/etc/kubernetes/cni/net.d/hereabouts.d',
  '/etc/cni/net.d/hereabouts.d',
];

/** The file, in each configuration directory, that holds the node's name. */
export const NODE_NAME_FILE = 'nodename';

export interface NodeNameSource {
  readonly name: string;
  /** "NODENAME", the file it was read from, or "hostname". */
  readonly from: string;
}

export interface NodeNameOptions {
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** `configuration_path`: a directory, or the flat file (its directory is searched then). */
  readonly configurationPath?: string;
  /** Searched after configuration_path; tests point this elsewhere. */
  readonly configDirs?: readonly string[];
  readonly hostname?: () => string;
}

export function resolveNodeName(options: NodeNameOptions = {}): NodeNameSource {
  const fromEnv = (options.env ?? process.env)['NODENAME']?.trim();
  if (fromEnv !== undefined && fromEnv !== '') return { name: fromEnv, from: 'NODENAME' };
  for (const dir of candidateDirs(options)) {
    const file = join(dir, NODE_NAME_FILE);
    const name = readNameFile(file);
    if (name !== undefined) return { name, from: file };
  }
  const host = (options.hostname ?? hostname)().trim();
  if (host === '') {
    throw new HereaboutsError(
      ErrorKind.InvalidEnvironment,
      'cannot tell the node name: NODENAME is unset, no nodename file, empty host name',
      {
        details: 'set NODENAME or write the node name to <configuration_path>/nodename',
      },
    );
  }
  return { name: host, from: 'hostname' };
}

function candidateDirs(options: NodeNameOptions): string[] {
  const dirs: string[] = [];
  const configured = options.configurationPath;
  if (configured !== undefined && configured !== '')
    dirs.push(isDirectory(configured) ? configured : dirname(configured));
  dirs.push(...(options.configDirs ?? DEFAULT_CONFIG_DIRS));
  return [...new Set(dirs)];
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch (err) {
    if (errnoOf(err) === 'ENOENT' || errnoOf(err) === 'ENOTDIR') return false;
    throw err;
  }
}

/** The trimmed first line of a file; undefined when it is missing or empty. */
function readNameFile(file: string): string | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    const code = errnoOf(err);
    if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'EISDIR') return undefined;
    throw new HereaboutsError(ErrorKind.Io, `cannot read node name file ${file}: ${messageOf(err)}`, { cause: err });
  }
  const name = text.split('\n', 1)[0]?.trim() ?? '';
  return name === '' ? undefined : name;
}
