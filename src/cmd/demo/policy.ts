/** The policy the demo imports: only `app=client` may reach `app=server`, and only on 80/TCP. */

/** Namespace of the demo pods. */
export const DEMO_NAMESPACE = 'demo';

/** A CiliumNetworkPolicy allowing app=client → app=server on 80/TCP (everything else to the server drops). */
export const DEMO_POLICY = `apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata:
  name: server-allows-client-on-80
  namespace: ${DEMO_NAMESPACE}
spec:
  endpointSelector:
    matchLabels:
      app: server
  ingress:
    - fromEndpoints:
        - matchLabels:
            app: client
      toPorts:
        - ports:
            - port: "80"
              protocol: TCP
`;
