import { useState } from 'react';
import { describe, postJson } from '../api.js';

interface Pong {
  status: string;
  latency_ms: number;
  server_version?: string;
}

/** `POST /api/stores/:name/ping` (a POST, so the API refuses it to a viewer and the list hides it). */
export function StorePing({ name }: { name: string }) {
  const [result, setResult] = useState<string | undefined>();
  const ping = async () => {
    setResult('…');
    try {
      const pong = await postJson<Pong>(`/api/stores/${encodeURIComponent(name)}/ping`, {});
      setResult(
        `${pong.status} · ${pong.latency_ms} ms${pong.server_version ? ` · v${pong.server_version}` : ''}`,
      );
    } catch (err) {
      setResult(`unreachable: ${describe(err)}`);
    }
  };
  return (
    <>
      <button type="button" onClick={() => void ping()}>
        Ping
      </button>
      {result !== undefined && (
        <output className="ping" aria-label={`Ping ${name}`}>
          {result}
        </output>
      )}
    </>
  );
}
