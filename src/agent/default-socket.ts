/** Where the node agent listens unless told otherwise (the plugin: HEREABOUTS_AGENT_SOCKET in the runtime's environment). */
export const DEFAULT_AGENT_SOCKET = '/run/hereabouts/agent.sock';
