// A pod in protobuf (k8s.io/api/core/v1 Pod) decoded into the few fields pod-view.ts reads, shaped as the JSON
// object would be (times as epoch milliseconds, which podView reads as it reads RFC 3339 text), so that one rule set
// judges pods however they were read. Everything else (managedFields, most of the spec, labels, owner references)
// is skipped by its length. Field numbers: k8s.io/api core/v1 and apimachinery meta/v1 generated.proto.
import { FieldReader, LEN, VARINT } from '../../kube/protobuf-wire.ts';
import { POD_VIEW_ANNOTATIONS } from './pod-view.ts';

type Obj = Record<string, unknown>;

/** The pod's JSON shape, reduced to what podView reads. Throws WireError on bytes that are not a message. */
export function podFromProtobuf(bytes: Uint8Array): Obj {
  const pod: Obj = {};
  for (const f = new FieldReader(bytes); f.next();) {
    if (f.wire !== LEN) continue;
    if (f.number === 1) pod['metadata'] = objectMeta(f.message());
    else if (f.number === 2) pod['spec'] = podSpec(f.message());
    else if (f.number === 3) pod['status'] = podStatus(f.message());
  }
  return pod;
}

function objectMeta(f: FieldReader): Obj {
  const meta: Obj = {};
  const annotations: Obj = {};
  while (f.next()) {
    if (f.wire !== LEN) continue;
    if (f.number === 1) meta['name'] = f.text();
    else if (f.number === 3) meta['namespace'] = f.text();
    else if (f.number === 5) meta['uid'] = f.text();
    else if (f.number === 6) meta['resourceVersion'] = f.text();
    else if (f.number === 8) meta['creationTimestamp'] = time(f.message());
    else if (f.number === 9) meta['deletionTimestamp'] = time(f.message());
    else if (f.number === 12) {
      const [key, value] = mapEntry(f.message());
      if (POD_VIEW_ANNOTATIONS.includes(key)) annotations[key] = value;
    }
  }
  meta['annotations'] = annotations;
  return meta;
}

function podSpec(f: FieldReader): Obj {
  const containers: Obj[] = [];
  const initContainers: Obj[] = [];
  while (f.next()) {
    if (f.wire !== LEN) continue;
    if (f.number === 2) containers.push(container(f.message()));
    else if (f.number === 20) initContainers.push(container(f.message()));
    // Ephemeral containers (34) are not read: runsWhereabouts looks at init and app containers only.
  }
  return { containers, initContainers };
}

function container(f: FieldReader): Obj {
  let image: string | undefined;
  const command: string[] = [];
  const args: string[] = [];
  while (f.next()) {
    if (f.wire !== LEN) continue;
    if (f.number === 2) image = f.text();
    else if (f.number === 3) command.push(f.text());
    else if (f.number === 4) args.push(f.text());
  }
  return { image, command, args };
}

function podStatus(f: FieldReader): Obj {
  let phase: string | undefined;
  const conditions: Obj[] = [];
  const containerStatuses: Obj[] = [];
  const initContainerStatuses: Obj[] = [];
  const ephemeralContainerStatuses: Obj[] = [];
  while (f.next()) {
    if (f.wire !== LEN) continue;
    if (f.number === 1) {
      const text = f.text();
      if (text !== '') phase = text; // an empty string is how protobuf says "unset"
    } else if (f.number === 2) conditions.push(condition(f.message()));
    else if (f.number === 8) containerStatuses.push(containerStatus(f.message()));
    else if (f.number === 10) initContainerStatuses.push(containerStatus(f.message()));
    else if (f.number === 13) ephemeralContainerStatuses.push(containerStatus(f.message()));
  }
  return { phase, conditions, containerStatuses, initContainerStatuses, ephemeralContainerStatuses };
}

function condition(f: FieldReader): Obj {
  const out: Obj = {};
  while (f.next()) {
    if (f.wire !== LEN) continue;
    if (f.number === 1) out['type'] = f.text();
    else if (f.number === 2) out['status'] = f.text();
    else if (f.number === 4) out['lastTransitionTime'] = time(f.message());
    else if (f.number === 5) out['reason'] = f.text();
  }
  return out;
}

/** ContainerStatus: only its state (2): running (2), and terminated (3) with its finishedAt (6). */
function containerStatus(f: FieldReader): Obj {
  const state: Obj = {};
  while (f.next()) {
    if (f.number !== 2 || f.wire !== LEN) continue;
    for (const s = f.message(); s.next();) {
      if (s.wire !== LEN) continue;
      if (s.number === 2) state['running'] = {};
      else if (s.number === 3) {
        const terminated: Obj = {};
        for (const t = s.message(); t.next();)
          if (t.number === 6 && t.wire === LEN) terminated['finishedAt'] = time(t.message());
        state['terminated'] = terminated;
      }
    }
  }
  return { state };
}

/** A map<string,string> entry: key (1), value (2). */
function mapEntry(f: FieldReader): [string, string] {
  let key = '';
  let value = '';
  while (f.next()) {
    if (f.wire !== LEN) continue;
    if (f.number === 1) key = f.text();
    else if (f.number === 2) value = f.text();
  }
  return [key, value];
}

/** meta/v1 Time (seconds 1, nanos 2) in epoch milliseconds; the zero time (an empty message) as null, as in JSON. */
function time(f: FieldReader): number | null {
  let seconds = 0;
  while (f.next()) if (f.number === 1 && f.wire === VARINT) seconds = f.value;
  // Seconds past 2^53 are a negative int64 (before 1970): no pod has such a time; they read as the zero time.
  return seconds === 0 || seconds > Number.MAX_SAFE_INTEGER ? null : seconds * 1000;
}
