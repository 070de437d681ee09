import { Handle, Position, type NodeProps } from '@xyflow/react';
import type { PolicyNode } from './graph.js';

/** One policy node: id and type, its input on the left, one labelled handle per output port on the right. */
export function PluginNodeView({ id, data, selected }: NodeProps<PolicyNode>) {
  const classes = ['pnode'];
  if (selected) classes.push('selected');
  if (data.issues.length > 0 || Object.keys(data.portIssues).length > 0) classes.push('has-issues');
  if (data.traced !== undefined) classes.push(data.traced.error ? 'traced traced-error' : 'traced');
  return (
    <div className={classes.join(' ')} data-node-id={id}>
      {/* Named port to port (`auth.denied`); the keyboard way to wire them is the side panel's Wiring (F12). */}
      {data.hasInput && (
        <Handle
          type="target"
          position={Position.Left}
          id="in"
          title="in"
          role="img"
          aria-label={`${id}.in`}
        />
      )}
      <div className="pnode-head">
        <span className="pnode-id">{id}</span>
        <span className="pnode-type">{data.type}</span>
        {data.configRef !== undefined && <span className="pnode-ref">config_ref: {data.configRef}</span>}
      </div>
      <div className="pnode-ports">
        {data.outputs.map((port) => {
          const problem = data.portIssues[port.name];
          return (
            <div
              key={port.name}
              className={`pnode-port kind-${port.kind}${problem === undefined ? '' : ' port-issue'}`}
              title={problem ?? port.description}
            >
              <span className="port-label">{port.name}</span>
              <Handle
                type="source"
                position={Position.Right}
                id={port.name}
                role="img"
                aria-label={`${id}.${port.name}`}
              />
            </div>
          );
        })}
      </div>
      {data.traced !== undefined && (
        <div className="pnode-trace" title="Trace steps that ran in this node">
          step {data.traced.steps.join(', ')} · {data.traced.us} µs
        </div>
      )}
      {data.figures !== undefined && <div className="pnode-figures">{data.figures}</div>}
      {data.issues.map((message, i) => (
        <div key={i} className="pnode-issue" title={message}>
          {message}
        </div>
      ))}
    </div>
  );
}
