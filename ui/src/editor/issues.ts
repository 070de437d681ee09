import type { Issue, NodeConfig } from '../types.js';

/** A validation problem, attached to the node (and port) it names when it names one. */
export interface Located {
  message: string;
  node: string | undefined;
  port: string | undefined;
}

/**
 * Finds the node a problem is about: first by its path (`policies[2].nodes[1].config.x`,
 * an index into the nodes that were sent), else by the `node 'x'` its message
 * names. The port comes from `port 'p'` or `from 'x.p'` in the message. The
 * part of the path below the node (`config.x`) stays in front of the message.
 */
export function locate(issues: Issue[], sent: NodeConfig[]): Located[] {
  return issues.map((issue) => {
    const inNode = /nodes\[(\d+)\]\.?(.*)$/.exec(issue.path);
    const byPath = inNode === null ? undefined : sent[Number(inNode[1])]?.id;
    const node = byPath ?? /node '([^']+)'/.exec(issue.message)?.[1];
    const port =
      /port '([^']+)'/.exec(issue.message)?.[1] ?? /from '[^']*\.([^'.]+)'/.exec(issue.message)?.[1];
    // The editor already shows which policy this is.
    const text = issue.message.replace(/^policy '[^']*': /, '');
    let where = '';
    if (inNode !== null) where = inNode[2] ?? '';
    else if (!/^(policies\[\d+\]|policy)?$/.test(issue.path)) where = issue.path;
    return {
      message: where === '' ? text : `${where}: ${text}`,
      node,
      port: node === undefined ? undefined : port,
    };
  });
}
