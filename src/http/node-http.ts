// node:http and node:https for the gateway's own modules. An ES import of node:http, default or
// named, builds the module's whole namespace: that reads its lazy WebSocket, CloseEvent and
// MessageEvent exports, which load Node's bundled undici (fetch, WebSocket, EventSource) and cost
// ~9 MiB of resident memory the gateway never uses. The CommonJS view that getBuiltinModule
// returns reads nothing it is not asked for. Type-only imports of node:http are free (erased).
export const http = process.getBuiltinModule('node:http');
export const https = process.getBuiltinModule('node:https');
