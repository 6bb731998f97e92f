// KubeVirt's VirtualMachine and VirtualMachineInstance kinds for tests on a control plane without KubeVirt: minimal
// CRDs (any content, a status subresource), enough for objects that exist or not, which is all hereabouts reads of
// them (docs/sticky.md). Created once per control plane; every test that needs them asks for the same definition.
import { apiRequest, type ControlPlane } from './control-plane.ts';

export async function kubevirtKinds(cp: ControlPlane): Promise<void> {
  for (const [kind, plural] of [
    ['VirtualMachine', 'virtualmachines'],
    ['VirtualMachineInstance', 'virtualmachineinstances'],
  ] as const) {
    const res = await apiRequest(cp, 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: `${plural}.kubevirt.io` },
      spec: {
        group: 'kubevirt.io',
        scope: 'Namespaced',
        names: { kind, plural, singular: kind.toLowerCase(), listKind: `${kind}List` },
        versions: [
          {
            name: 'v1',
            served: true,
            storage: true,
            subresources: { status: {} },
            schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
          },
        ],
      },
    });
    if (res.status !== 201 && res.status !== 409) throw new Error(`CRD ${plural}.kubevirt.io: HTTP ${res.status}`);
  }
  for (const plural of ['virtualmachines', 'virtualmachineinstances']) {
    let served = false;
    for (let i = 0; i < 300 && !served; i++) {
      served = (await apiRequest(cp, 'GET', `/apis/kubevirt.io/v1/${plural}`)).status === 200;
      if (!served) await new Promise((r) => setTimeout(r, 100));
    }
    if (!served) throw new Error(`the KubeVirt kind ${plural} is not served`);
  }
}
