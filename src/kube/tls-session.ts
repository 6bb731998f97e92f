// TLS session resumption across CNI processes: the API server's session ticket is kept in the node cache, so the
// next process resumes instead of doing a full handshake (no certificate chain to verify, no client signature).
// A ticket lets its holder resume the session as this client, so it gets the care of a private key: a 0600 file in
// a 0700 directory, ignored unless we own it and nobody else can read it. The file name hashes everything the
// session is bound to (server, CA, client certificate and key, server name): other credentials never resume it.
import { createHash } from 'node:crypto';
import { closeSync, fstatSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import type { RequestOptions } from 'node:https';
import { join } from 'node:path';
import { CONNECTION_DIR } from './endpoint-cache.ts';
import { writeFileAtomic } from '../fs/atomic-write.ts';

/** Upper bound of a ticket file we read (tickets are a few hundred bytes). */
const MAX_SESSION_BYTES = 16 * 1024;

export class TlsSessionStore {
  readonly file: string;

  constructor(cacheDir: string, server: string, options: RequestOptions) {
    const hash = createHash('sha256').update(server);
    for (const part of [
      options.ca,
      options.cert,
      options.key,
      options.servername,
      String(options.rejectUnauthorized),
    ]) {
      hash.update('\0');
      if (part !== undefined)
        hash.update(typeof part === 'string' || Buffer.isBuffer(part) ? part : JSON.stringify(part));
    }
    this.file = join(cacheDir, CONNECTION_DIR, `${hash.digest('hex').slice(0, 32)}.tls-session`);
  }

  /** The stored ticket, or undefined (none, unreadable, or not private). */
  load(): Buffer | undefined {
    let fd: number;
    try {
      fd = openSync(this.file, 'r');
    } catch {
      return undefined;
    }
    try {
      const st = fstatSync(fd);
      if (!st.isFile() || (st.mode & 0o077) !== 0 || st.uid !== process.getuid?.() || st.size > MAX_SESSION_BYTES)
        return undefined;
      return readFileSync(fd);
    } catch {
      return undefined;
    } finally {
      closeSync(fd);
    }
  }

  /** Replaces the stored ticket; failures only cost the next process a full handshake. */
  save(session: Buffer): void {
    try {
      mkdirSync(join(this.file, '..'), { recursive: true, mode: 0o700 });
      writeFileAtomic(this.file, session, { mode: 0o600, durable: false });
    } catch {
      // The next process makes a full handshake.
    }
  }
}
