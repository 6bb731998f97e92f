// The long-running installer retries what fails (files, the stats fold, the metrics port, the agent socket) at every
// check; each distinct failure is logged once, not once per check.
export class RetryLog {
  readonly #log: (message: string) => void;
  #last = '';

  constructor(log: (message: string) => void) {
    this.#log = log;
  }

  failed(message: string): void {
    if (message !== this.#last) this.#log(message);
    this.#last = message;
  }

  /** A success: true when it ends a run of failures. */
  succeeded(): boolean {
    const recovered = this.#last !== '';
    this.#last = '';
    return recovered;
  }
}
