/** One prompt argument as prompts/list shows it. */
export interface PromptArgument {
  name: string;
  description: string;
  required: boolean;
}

export interface PromptDef {
  name: string;
  description: string;
  arguments: PromptArgument[];
  /** The user message; every required argument is present. */
  render(args: Record<string, string>): string;
}

const arg = (name: string, description: string, required = true): PromptArgument => ({
  name,
  description,
  required,
});

const READ_ONLY =
  'If a write tool answers `forbidden`, your token is read-only: give the final YAML to the user instead.';

const AUTHOR_LOOP =
  'Loop: get_node_type for every node type you use (ports and config keys) → draft → validate (fix every error; every success and outcome port must be wired) → put_*(dry_run=true) → put_*.';

/**
 * Short instructions that tell an agent which tools to call, in which order,
 * and what to look at. They carry no gateway data: the tools fetch it live.
 */
export const PROMPTS: readonly PromptDef[] = [
  {
    name: 'troubleshoot_trace',
    description: 'Find out why a traced request did not do what the user expected.',
    arguments: [
      arg('trace_id', 'Trace id (x-switchyard-trace-id header or list_traces)'),
      arg('expected', 'What the user expected instead', false),
    ],
    render: (a) =>
      [
        `Troubleshoot trace ${a['trace_id']}.${a['expected'] === undefined ? '' : ` The user expected: ${a['expected']}.`}`,
        `1. get_trace(id="${a['trace_id']}"): note the final status, response_origin and the first step whose outcome is an error or an unexpected port.`,
        '2. get_trace_step on that step: compare the context before and after with the node_config.',
        '3. get_node_type for the node type to see what its config keys and ports mean.',
        '4. State the cause in one paragraph, then propose the smallest config change (YAML) and check it with validate_policy (write token; with a read token hand the YAML over unchecked).',
      ].join('\n'),
  },
  {
    name: 'explain_trace',
    description: 'Walk through a traced request node by node.',
    arguments: [arg('trace_id', 'Trace id')],
    render: (a) =>
      `Call get_trace(id="${a['trace_id']}"). Walk through what happened to this request node by node: which port each node left through, which edge was taken and what it changed in the context. End with which node produced the final response and why.`,
  },
  {
    name: 'why_this_port',
    description: 'Explain why one node of a trace left through the port it did.',
    arguments: [arg('trace_id', 'Trace id'), arg('node_id', 'Node id as shown in the trace')],
    render: (a) =>
      `Call get_trace_step(id="${a['trace_id']}", node_id="${a['node_id']}") and get_node_type for its node type. Explain why node ${a['node_id']} left through the port it did: point at the config keys and the context values (headers, query, message, response) that decided it, and say what would have to change for it to take another port.`,
  },
  {
    name: 'why_this_response',
    description: 'Explain which node set the response status and body of a traced request.',
    arguments: [arg('trace_id', 'Trace id')],
    render: (a) =>
      `Call get_trace(id="${a['trace_id']}"). Find response_origin and the last step whose changes touch response.status_code or the response body; inspect it with get_trace_step. Explain which node set the response the client received, from which config, and why.`,
  },
  {
    name: 'review_policy',
    description: 'Review a stored policy for mistakes and risky wiring.',
    arguments: [arg('policy_name', 'Policy name')],
    render: (a) =>
      [
        `Review policy ${a['policy_name']}: get_policy(name="${a['policy_name']}"), then get_node_type for each node type it uses, and validate_policy on it.`,
        'Look for: unreachable nodes; error ports left to the catch-all where a specific answer is wanted; auth or rate limiting after the upstream; request rewrites after the upstream; nodes that force response buffering (validate_policy `buffering`); lone cache halves (`cache_pairs`); redundant nodes.',
        'Propose concrete YAML edits and validate them with validate_policy before presenting them.',
      ].join('\n'),
  },
  {
    name: 'design_policy',
    description: 'Design a new policy for a goal, validate it, and save it.',
    arguments: [arg('goal', 'What the policy should do'), arg('name', 'Policy name', false)],
    render: (a) =>
      [
        `Design a policy${a['name'] === undefined ? '' : ` named ${a['name']}`} that ${a['goal']}.`,
        'Start with list_node_types; a policy runs listener.out → … → client.in, and upstream nodes call the backend. Use list_vars for per-request values and list_plugin_configs / list_stores for what can be referenced.',
        `${AUTHOR_LOOP} Use validate_policy and put_policy.`,
        READ_ONLY,
      ].join('\n'),
  },
  {
    name: 'design_supernode',
    description: 'Design a reusable supernode (subgraph) for a goal.',
    arguments: [arg('goal', 'What the supernode should do'), arg('name', 'Supernode name', false)],
    render: (a) =>
      [
        `Design a supernode${a['name'] === undefined ? '' : ` named ${a['name']}`} that ${a['goal']}.`,
        'A supernode has one node of type input (id input) and output nodes (id output for the success path; other output ids become named ports of the instance). Errors leave an instance through its error port. Supernodes cannot contain supernodes. See list_supernodes for examples.',
        `${AUTHOR_LOOP} Use validate_supernode and put_supernode; then show how a policy uses it: {"id": "x", "type": "supernode", "config": {"name": "<supernode>"}}.`,
        READ_ONLY,
      ].join('\n'),
  },
  {
    name: 'design_route',
    description: 'Add a route that sends matching requests to a policy.',
    arguments: [arg('goal', 'Which requests the route should catch and what should happen to them')],
    render: (a) =>
      [
        `Design a route so that ${a['goal']}.`,
        'Read list_routes first: routes are tried by priority (higher first, default 0), then in list order, and the first match wins, so a new route must not be shadowed by a broader one before it (or give it a higher priority). Read list_policies to pick the policy, or design one first (design_policy).',
        'A route is {"match": {"path": "/x/*", "methods"?: [...], "hosts"?: [...], "headers"?: {...}}, "policy": "<name>"}. Check it with put_route(dry_run=true), then put_route, then confirm with a request or run_sandbox on the policy.',
        READ_ONLY,
      ].join('\n'),
  },
  {
    name: 'diagnose_route',
    description: 'Work out what the gateway would do with a given request.',
    arguments: [
      arg('method', 'HTTP method'),
      arg('path', 'Request path'),
      arg('headers', 'Request headers as JSON, e.g. {"x-api-key": "k"}', false),
    ],
    render: (a) =>
      [
        `Work out what happens to ${a['method']} ${a['path']}${a['headers'] === undefined ? '' : ` with headers ${a['headers']}`}.`,
        '1. list_routes: find the first route whose match (path, methods, hosts, headers) fits; say so if none does (the gateway answers 404).',
        `2. run_sandbox(policy="<that route's policy>", context={"method": "${a['method']}", "path": "${a['path']}"${a['headers'] === undefined ? '' : `, "headers": ${a['headers']}`}}) and read the trace. If the sandbox is disabled (or your token has scope read), reason from get_policy and get_node_type instead.`,
        '3. Explain node by node what would happen and what the client would receive.',
      ].join('\n'),
  },
];

export const promptByName = (name: string): PromptDef | undefined => PROMPTS.find((p) => p.name === name);
