// asking_server.mjs — a stdio MCP server that asks its client during a call (for
// tests/mcp/test_client_era.c): tools/call sends elicitation/create, and the call's answer is
// what came back ({answer: result, or {error: code}}) with the capabilities initialize declared.
import readline from 'node:readline';

const send = (m) => process.stdout.write(JSON.stringify(m) + '\n');
let caps = null;
let call = null;
readline.createInterface({ input: process.stdin }).on('line', (line) => {
  const m = JSON.parse(line);
  if (m.method === 'initialize') {
    caps = m.params?.capabilities ?? null;
    send({ jsonrpc: '2.0', id: m.id, result: { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} },
      serverInfo: { name: 'asking', version: '1' } } });
  } else if (m.method === 'ping') {
    send({ jsonrpc: '2.0', id: m.id, result: {} });
  } else if (m.method === 'tools/call') {
    call = m.id;
    send({ jsonrpc: '2.0', id: 'ask-1', method: 'elicitation/create',
      params: { message: 'Which?', requestedSchema: { type: 'object', properties: { x: { type: 'integer' } } } } });
  } else if (m.id === 'ask-1' && call !== null) {
    const answer = m.result ?? { error: m.error?.code };
    send({ jsonrpc: '2.0', id: call, result: { content: [{ type: 'text', text: JSON.stringify({ answer, caps }) }] } });
    call = null;
  }
});
