// The answer for a call that was handed to the node agent but not answered in time (or at all): CNI code 11 in the
// request's cniVersion, as the plugin would render it. The call may still complete in the agent; a runtime's retry
// of the same ADD is safe because ADD is idempotent per container and interface.
import { CniCode } from '../cni/errors.ts';
import { bestEffortVersion } from '../cni/version.ts';

export function unansweredJson(stdin: Buffer, why: string): string {
  let request: unknown;
  try {
    request = JSON.parse(stdin.toString('utf8'));
  } catch {
    request = undefined; // not JSON: the latest version, as the plugin would answer
  }
  const doc = {
    cniVersion: bestEffortVersion(request),
    code: CniCode.TryAgainLater,
    msg: `node agent did not answer: ${why}`,
    details:
      'the node agent may still complete the call; retrying the same ADD is safe (ADD is idempotent per container and interface)',
  };
  return `${JSON.stringify(doc)}\n`;
}
