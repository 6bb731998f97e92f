// kubectl (built with the test control plane) and what the deploy/ tests ask of it and of the API server.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadAll } from 'js-yaml';
import { api, type ControlPlane } from '../../support/control-plane.ts';

export interface Manifest {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: { readonly name: string; readonly namespace?: string };
  readonly spec: Record<string, unknown>;
}

export function kubectlOf(cp: ControlPlane): string {
  const line = readFileSync(join(cp.dir, 'env'), 'utf8').split('\n').find((l) => l.startsWith('export KUBECTL='));
  assert.ok(line !== undefined, 'start.sh records KUBECTL');
  return line.slice('export KUBECTL='.length).replace(/^'|'$/g, '');
}

/** `kubectl kustomize <dir>`: the objects `kubectl apply -k <dir>` would send. */
export function renderedManifests(kubectl: string, dir: string): Manifest[] {
  const yaml = execFileSync(kubectl, ['kustomize', dir], { encoding: 'utf8' });
  return loadAll(yaml) as Manifest[];
}

export interface Access {
  readonly verb: string;
  readonly resource: string;
  readonly group?: string;
  readonly subresource?: string;
  readonly name?: string;
  /** Omitted: cluster-wide. */
  readonly namespace?: string;
}

export const describeAccess = (a: Access): string =>
  `${a.verb} ${a.group ? `${a.group}/` : ''}${a.resource}${a.subresource ? `/${a.subresource}` : ''}${a.name ? ` ${a.name}` : ''} ${a.namespace ? `in ${a.namespace}` : 'cluster-wide'}`;

/** Would the API server let this ServiceAccount do it? (a SubjectAccessReview, asked as admin) */
export async function allowed(cp: ControlPlane, serviceAccount: { namespace: string; name: string }, access: Access): Promise<boolean> {
  const review = (await api(cp, 'POST', '/apis/authorization.k8s.io/v1/subjectaccessreviews', {
    apiVersion: 'authorization.k8s.io/v1',
    kind: 'SubjectAccessReview',
    spec: {
      user: `system:serviceaccount:${serviceAccount.namespace}:${serviceAccount.name}`,
      groups: ['system:serviceaccounts', `system:serviceaccounts:${serviceAccount.namespace}`, 'system:authenticated'],
      resourceAttributes: {
        verb: access.verb,
        group: access.group ?? '',
        resource: access.resource,
        ...(access.subresource === undefined ? {} : { subresource: access.subresource }),
        ...(access.name === undefined ? {} : { name: access.name }),
        ...(access.namespace === undefined ? {} : { namespace: access.namespace }),
      },
    },
  })) as { status: { allowed?: boolean } };
  return review.status.allowed === true;
}
