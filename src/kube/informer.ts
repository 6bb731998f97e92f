// List+watch of one resource, as client-go's reflector: a LIST (paginated JSON, or for a built-in kind one streamed
// protobuf answer from the watch cache), then a WATCH from the list's resourceVersion with bookmarks; a watch that
// ends is re-opened from the last version seen, a 410 Gone (or a failed watch) re-lists and reports what changed
// meanwhile. Only a stripped view of each object is kept (memory stays
// bounded with tens of thousands of pods), keyed "namespace/name" (or "name" when cluster-scoped).
import { statusText, type ApiClient } from './api.ts';
import { messageOf } from '../errors.ts';
import type { Log } from '../log/json-log.ts';
import { openWatch, type WatchEvent } from './watch-stream.ts';
import { listProtobuf, NOT_PROTOBUF } from './protobuf-list.ts';

export type ChangeKind = 'added' | 'updated' | 'deleted';

export interface InformerOptions<T> {
  /** For logs and metrics: "pods", "ippools", … */
  readonly resource: string;
  /** Collection path, e.g. /api/v1/pods or /apis/…/namespaces/ns/ippools. */
  readonly path: string;
  /** Query parameters added to every list and watch (e.g. `fieldSelector=spec.nodeName%3Dnode-a`), already encoded. */
  readonly query?: string;
  /** The view kept of an object; undefined: not kept (as if it did not exist). */
  readonly view: (object: unknown) => T | undefined;
  readonly onChange?: (kind: ChangeKind, key: string, current: T | undefined, previous: T | undefined) => void;
  readonly log: Log;
  /** Items per LIST page (PAGE by default): fewer for big objects such as IPPools. */
  readonly pageSize?: number;
  /**
   * A built-in kind: list it in protobuf, streamed, from the API server's watch cache (protobuf-list.ts), each item
   * decoded by this into the JSON shape `view` reads (or as much of it as `view` needs). Watches stay JSON.
   */
  readonly protobuf?: (bytes: Uint8Array) => unknown;
}

/**
 * Items per LIST page. Small pages keep the peak low: a page is garbage as soon as its views are taken, and with
 * V8's young generation kept small (main.ts) a bigger page is promoted whole to the old generation first.
 */
const PAGE = 250;
/** A streamed list that sends nothing for this long is given up (a whole list may take longer). */
const LIST_IDLE_MS = 30_000;

type Meta = { metadata?: { name?: unknown; namespace?: unknown; resourceVersion?: unknown } };

export function keyOf(object: unknown): string | undefined {
  const meta = (object as Meta | null)?.metadata;
  if (typeof meta?.name !== 'string') return undefined;
  // join() makes one flat string; a template literal would keep a tree of the parts (three strings per key).
  return typeof meta.namespace === 'string' && meta.namespace !== ''
    ? [meta.namespace, meta.name].join('/')
    : meta.name;
}

export class Informer<T> {
  readonly items = new Map<string, T>();
  readonly #api: ApiClient;
  readonly #o: InformerOptions<T>;
  #resourceVersion = '';
  #synced = false;
  /** The server answered a protobuf list in JSON: list in JSON pages. */
  #jsonOnly = false;
  /** The last watch ended with 410 Gone: the next list is a consistent read. */
  #expired = false;
  #stopped = false;
  #watch: { close(): void } | undefined;
  #timer: NodeJS.Timeout | undefined;
  #failures = 0;
  #firstSync: { promise: Promise<void>; resolve: () => void };

  constructor(api: ApiClient, options: InformerOptions<T>) {
    this.#api = api;
    this.#o = options;
    let resolve = (): void => undefined;
    const promise = new Promise<void>((r) => (resolve = r));
    this.#firstSync = { promise, resolve };
  }

  get resource(): string {
    return this.#o.resource;
  }

  /** The cache reflects the server: listed, and not re-listing after a failed watch. */
  get synced(): boolean {
    return this.#synced;
  }

  /** Resolves after the first complete list. */
  whenSynced(): Promise<void> {
    return this.#firstSync.promise;
  }

  start(): void {
    void this.#list();
  }

  stop(): void {
    this.#stopped = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#watch?.close();
  }

  async #list(): Promise<void> {
    if (this.#stopped) return;
    const fresh = new Map<string, T>();
    const keep = (item: unknown): void => {
      const key = keyOf(item);
      const view = key === undefined ? undefined : this.#o.view(item);
      if (key !== undefined && view !== undefined) fresh.set(key, view);
    };
    const decode = this.#jsonOnly ? undefined : this.#o.protobuf;
    try {
      const streamed = decode === undefined ? undefined : await this.#streamList((bytes) => keep(decode(bytes)));
      if (streamed === 'absent') return;
      if (streamed === 'json') {
        this.#jsonOnly = true;
        this.#o.log.warning(`${this.#o.resource}: the API server does not answer in protobuf; listing in JSON pages`);
      }
      if (streamed !== 'streamed' && (await this.#pagedList(keep))) return;
    } catch (err) {
      this.#retry(`list failed: ${messageOf(err)}`, () => void this.#list());
      return;
    }
    // stop() may have run during the awaits above (TypeScript narrows #stopped across them).
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition
    if (this.#stopped) return;
    this.#replace(fresh);
    this.#synced = true;
    this.#expired = false;
    this.#failures = 0;
    this.#firstSync.resolve();
    this.#o.log.debug(`${this.#o.resource}: listed ${fresh.size}`, {
      resource: this.#o.resource,
      resourceVersion: this.#resourceVersion,
    });
    this.#openWatch();
  }

  /**
   * The whole list in one streamed protobuf answer, served from the API server's watch cache; 'json' when something
   * in between answered in JSON (the list is then made in JSON pages, from now on).
   */
  async #streamList(keep: (bytes: Uint8Array) => void): Promise<'streamed' | 'absent' | 'json'> {
    // As client-go's reflector: the first list from the cache whatever its age, a list after a failed watch not
    // older than what was seen, and after a 410 a consistent read.
    const from = this.#expired ? '' : this.#resourceVersion === '' ? '0' : this.#resourceVersion;
    const res = await listProtobuf(this.#api.endpoint, `${this.#o.path}?${this.#extra}resourceVersion=${from}`, keep, {
      idleMs: LIST_IDLE_MS,
    });
    if (res.status === 404) {
      this.#absent();
      return 'absent';
    }
    if (res.status === NOT_PROTOBUF) return 'json';
    if (!('resourceVersion' in res)) throw new Error(`list ${this.#o.resource}: ${res.message}`);
    this.#resourceVersion = res.resourceVersion;
    return 'streamed';
  }

  /** The list page by page in JSON (custom resources have no protobuf). True when the resource is not served. */
  async #pagedList(keep: (item: unknown) => void): Promise<boolean> {
    let token = '';
    do {
      const query = `limit=${this.#o.pageSize ?? PAGE}${token === '' ? '' : `&continue=${encodeURIComponent(token)}`}`;
      const res = await this.#api.send({ method: 'GET', path: `${this.#o.path}?${this.#extra}${query}` });
      if (res.status === 410 && token !== '') throw new Error('the list snapshot expired while paging');
      if (res.status === 404 && token === '') {
        this.#absent();
        return true;
      }
      if (res.status !== 200) throw new Error(`list ${this.#o.resource}: ${statusText(res)}`);
      const body = res.body as { items?: unknown[]; metadata?: { continue?: string; resourceVersion?: string } };
      for (const item of body.items ?? []) keep(item);
      token = body.metadata?.continue ?? '';
      this.#resourceVersion = body.metadata?.resourceVersion ?? '';
    } while (token !== '');
    return false;
  }

  /** The resource is not served (its CRD is not installed): empty, and looked for again in a minute. */
  #absent(): void {
    if (this.#stopped) return;
    if (!this.#synced)
      this.#o.log.warning(`${this.#o.resource}: not served by the API server (CRD not installed?); treated as empty`);
    this.#replace(new Map());
    this.#synced = true;
    this.#firstSync.resolve();
    this.#timer = setTimeout(() => void this.#list(), 60_000);
  }

  /** Swaps in a fresh list, reporting the differences as the watch would have. */
  #replace(fresh: Map<string, T>): void {
    for (const [key, previous] of this.items) {
      if (!fresh.has(key)) {
        this.items.delete(key);
        this.#o.onChange?.('deleted', key, undefined, previous);
      }
    }
    for (const [key, current] of fresh) {
      const previous = this.items.get(key);
      this.items.set(key, current);
      this.#o.onChange?.(previous === undefined ? 'added' : 'updated', key, current, previous);
    }
  }

  /** The caller's query parameters, ready to precede the informer's own. */
  get #extra(): string {
    return this.#o.query === undefined || this.#o.query === '' ? '' : `${this.#o.query}&`;
  }

  #openWatch(): void {
    if (this.#stopped) return;
    const timeoutSeconds = 300 + Math.floor(Math.random() * 300);
    const path = `${this.#o.path}?${this.#extra}resourceVersion=${encodeURIComponent(this.#resourceVersion)}`;
    this.#watch = openWatch(
      this.#api.endpoint,
      path,
      {
        event: (event) => this.#apply(event),
        end: (failure) => {
          this.#watch = undefined;
          if (this.#stopped) return;
          if (this.#resourceVersion === '') return this.#relist('the watch expired (410 Gone)');
          if (failure === undefined) return this.#openWatch(); // the server's timeout: carry on from where we are
          if (failure.status === 410) return this.#relist('the watch expired (410 Gone)');
          this.#synced = false; // events may have been missed: not trustworthy until listed again
          this.#retry(`watch failed: ${failure.message}`, () => void this.#list());
        },
      },
      { timeoutSeconds, idleMs: (timeoutSeconds + 60) * 1000 },
    );
  }

  #apply(event: WatchEvent): void {
    const object = event.object as Meta & { code?: unknown };
    if (event.type === 'ERROR') {
      // A Status object: 410 Gone means our version is too old to continue from.
      this.#o.log.debug(`${this.#o.resource}: watch error ${JSON.stringify(event.object).slice(0, 200)}`);
      if (object.code === 410) {
        this.#resourceVersion = '';
        this.#watch?.close(); // ends the watch: the end handler lists again
      }
      return;
    }
    const rv = object.metadata?.resourceVersion;
    if (typeof rv === 'string' && rv !== '') this.#resourceVersion = rv;
    if (event.type === 'BOOKMARK') return;
    const key = keyOf(object);
    if (key === undefined) return;
    const previous = this.items.get(key);
    const current = event.type === 'DELETED' ? undefined : this.#o.view(object);
    if (current === undefined) {
      if (previous === undefined) return;
      this.items.delete(key);
      this.#o.onChange?.('deleted', key, undefined, previous);
      return;
    }
    this.items.set(key, current);
    this.#o.onChange?.(previous === undefined ? 'added' : 'updated', key, current, previous);
  }

  #relist(why: string): void {
    this.#o.log.info(`${this.#o.resource}: ${why}; listing again`, { resource: this.#o.resource });
    this.#synced = false;
    this.#expired = true;
    void this.#list();
  }

  #retry(why: string, again: () => void): void {
    if (this.#stopped) return;
    this.#failures++;
    const delayMs = Math.min(30_000, 500 * 2 ** Math.min(this.#failures, 6)) * (0.8 + Math.random() * 0.4);
    this.#o.log.warning(`${this.#o.resource}: ${why}; retrying in ${Math.round(delayMs)} ms`, {
      resource: this.#o.resource,
    });
    this.#timer = setTimeout(again, delayMs);
  }
}
