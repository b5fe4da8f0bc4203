#!/usr/bin/env node
// A small downstream MCP server (newline-delimited JSON-RPC on stdio, no dependencies) whose
// tools misbehave on purpose, for the graph engine's client tests:
//   echo        → structuredContent {echo: arguments, pid, calls}
//   text_json   → text content holding JSON (arguments.value)
//   text_raw    → text content that is not JSON (arguments.text)
//   fail        → isError with arguments.message
//   crash       → writes to stderr and exits before answering
//   hang        → never answers
//   slow        → answers {slept: ms} after arguments.ms milliseconds
//   env         → structuredContent {value: process.env[arguments.name] ?? null, cwd}
// With FAKE_CRASH_ON_START=1 it exits right away (restart/backoff tests).
import process from 'node:process';
import { createInterface } from 'node:readline';

if (process.env.FAKE_CRASH_ON_START === '1') {
  process.stderr.write('fake server: refusing to start\n');
  process.exit(3);
}

let calls = 0;
const send = (msg) => process.stdout.write(JSON.stringify(msg) + '\n');
const result = (id, r) => send({ jsonrpc: '2.0', id, result: r });
const text = (t) => ({ content: [{ type: 'text', text: t }] });

const tools = ['echo', 'text_json', 'text_raw', 'fail', 'crash', 'hang', 'slow', 'env'].map((name) => ({
  name,
  description: `fake ${name}`,
  inputSchema: { type: 'object' },
}));

function callTool(id, name, args) {
  calls++;
  switch (name) {
    case 'echo':
      return result(id, { ...text(JSON.stringify(args)), structuredContent: { echo: args, pid: process.pid, calls } });
    case 'text_json':
      return result(id, text(JSON.stringify(args.value)));
    case 'text_raw':
      return result(id, text(String(args.text)));
    case 'fail':
      return result(id, { ...text(String(args.message ?? 'failed')), isError: true });
    case 'crash':
      process.stderr.write('fake server: crashing on purpose\n');
      process.exit(7);
      return;
    case 'hang':
      return;
    case 'slow':
      setTimeout(() => result(id, { ...text('{}'), structuredContent: { slept: args.ms } }), args.ms);
      return;
    case 'env':
      return result(id, {
        ...text('{}'),
        structuredContent: { value: process.env[args.name] ?? null, cwd: process.cwd() },
      });
    default:
      return send({ jsonrpc: '2.0', id, error: { code: -32602, message: `Unknown tool: ${name}` } });
  }
}

const rl = createInterface({ input: process.stdin });
rl.on('line', (line) => {
  let msg;
  try {
    msg = JSON.parse(line);
  } catch {
    return;
  }
  if (msg.method === 'initialize') {
    return result(msg.id, {
      protocolVersion: msg.params?.protocolVersion ?? '2025-06-18',
      capabilities: { tools: {} },
      serverInfo: { name: 'fake', version: '1.0.0' },
    });
  }
  if (msg.method === 'tools/list') return result(msg.id, { tools });
  if (msg.method === 'tools/call') return callTool(msg.id, msg.params?.name, msg.params?.arguments ?? {});
  if (msg.method === 'ping') return result(msg.id, {});
  if (msg.id !== undefined && msg.method) {
    send({ jsonrpc: '2.0', id: msg.id, error: { code: -32601, message: 'Method not found' } });
  }
});
rl.on('close', () => process.exit(0));
