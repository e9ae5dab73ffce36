import { test } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { GatewayError } from '../../lib/errors.ts';
import {
  budgetToEffort,
  canonicalUsageToAnthropic,
  chatResponseToMessages,
  finishToStopReason,
  messagesRequestToChat,
} from './anthropic-bridge.ts';
import { parseMessagesRequest, type MessagesRequest } from './anthropic-messages.ts';

const req = (v: Record<string, unknown>): MessagesRequest =>
  parseMessagesRequest(Buffer.from(JSON.stringify({ model: 'claude', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }], ...v })));

const PNG = 'iVBORw0KGgo=';
const PDF = 'JVBERi0xLjQK';

test('a full conversation becomes the canonical chat request', () => {
  const chat = messagesRequestToChat(req({
    system: [{ type: 'text', text: 'You are terse.', cache_control: { type: 'ephemeral' } }, { type: 'text', text: 'Answer in French.' }],
    messages: [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What is in these?' },
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } },
          { type: 'image', source: { type: 'url', url: 'https://example.com/cat.jpg' } },
          { type: 'document', title: 'report.pdf', source: { type: 'base64', media_type: 'application/pdf', data: PDF } },
        ],
      },
      {
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: 'I should look up the weather.', signature: 'sig' },
          { type: 'redacted_thinking', data: 'xyz' },
          { type: 'text', text: 'Checking.' },
          { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } },
          { type: 'tool_use', id: 'toolu_2', name: 'get_time', input: {} },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'here you go' },
          { type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: 'sunny' }, { type: 'text', text: '21C' }] },
          { type: 'tool_result', tool_use_id: 'toolu_2', content: 'clock broke', is_error: true },
        ],
      },
      { role: 'system', content: [{ type: 'text', text: 'Be polite.' }] },
      { role: 'assistant', content: 'Il fait beau.' },
    ],
    temperature: 0.2,
    top_p: 0.9,
    top_k: 40,
    stop_sequences: ['END'],
    metadata: { user_id: 'u-42' },
  }));
  assert.deepEqual(chat, {
    model: 'claude',
    max_tokens: 100,
    temperature: 0.2,
    top_p: 0.9,
    stop: ['END'],
    user: 'u-42',
    messages: [
      { role: 'system', content: 'You are terse.\n\nAnswer in French.' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What is in these?' },
          { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } },
          { type: 'image_url', image_url: { url: 'https://example.com/cat.jpg' } },
          { type: 'file', file: { file_data: `data:application/pdf;base64,${PDF}`, filename: 'report.pdf' } },
        ],
      },
      {
        role: 'assistant',
        content: 'Checking.',
        tool_calls: [
          { id: 'toolu_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
          { id: 'toolu_2', type: 'function', function: { name: 'get_time', arguments: '{}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'toolu_1', content: 'sunny\n21C' },
      { role: 'tool', tool_call_id: 'toolu_2', content: 'clock broke' },
      { role: 'user', content: 'here you go' },
      { role: 'system', content: 'Be polite.' },
      { role: 'assistant', content: 'Il fait beau.' },
    ],
  });
});

test('text-only user turns become plain strings; a tool-result-only turn adds no user message', () => {
  const chat = messagesRequestToChat(req({
    system: 'sys',
    messages: [
      { role: 'user', content: [{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }] },
      { role: 'assistant', content: [{ type: 'tool_use', id: 't', name: 'f', input: { x: 1 } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't' }] },
    ],
  }));
  assert.deepEqual(chat.messages, [
    { role: 'system', content: 'sys' },
    { role: 'user', content: 'a\nb' },
    { role: 'assistant', content: null, tool_calls: [{ id: 't', type: 'function', function: { name: 'f', arguments: '{"x":1}' } }] },
    { role: 'tool', tool_call_id: 't', content: '' },
  ]);
});

test('images inside a tool result move into the user turn after the tool messages', () => {
  const chat = messagesRequestToChat(req({
    messages: [
      { role: 'assistant', content: [{ type: 'tool_use', id: 't', name: 'screenshot', input: {} }] },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 't', content: [{ type: 'text', text: 'shot' }, { type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data: 'AAA' } }] },
          { type: 'text', text: 'what do you see?' },
        ],
      },
    ],
  }));
  assert.deepEqual((chat.messages as unknown[]).slice(1), [
    { role: 'tool', tool_call_id: 't', content: 'shot' },
    { role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/jpeg;base64,AAA' } }, { type: 'text', text: 'what do you see?' }] },
  ]);
});

test('text documents become text; documents and images the chat format cannot carry are a 400 naming the source', () => {
  const chat = messagesRequestToChat(req({
    messages: [{ role: 'user', content: [
      { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'plain doc' } },
      { type: 'document', source: { type: 'content', content: [{ type: 'text', text: 'c1' }, { type: 'text', text: 'c2' }] } },
      { type: 'image', source: { type: 'base64', media_type: 'image/gif', data: 'R0lG' } },
    ] }],
  }));
  assert.deepEqual(chat.messages, [{ role: 'user', content: [
    { type: 'text', text: 'plain doc' },
    { type: 'text', text: 'c1\nc2' },
    { type: 'image_url', image_url: { url: 'data:image/gif;base64,R0lG' } },
  ] }]);
  const bad = (content: unknown[], param: string): void => {
    assert.throws(
      () => messagesRequestToChat(req({ messages: [{ role: 'user', content }] })),
      (e: unknown) => e instanceof GatewayError && e.status === 400 && e.param === param,
    );
  };
  bad([{ type: 'text', text: 'x' }, { type: 'document', source: { type: 'url', url: 'https://x/a.pdf' } }], 'messages[0].content[1].source');
  bad([{ type: 'image', source: { type: 'file', file_id: 'f' } }], 'messages[0].content[0].source');
});

test('custom tools become function tools; Anthropic-defined tools are dropped; tool_choice maps', () => {
  const tools = [
    { name: 'get_weather', description: 'Weather by city', input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
    { type: 'custom', name: 'noop', input_schema: { type: 'object' } },
    { type: 'web_search_20250305', name: 'web_search', max_uses: 3 },
    { type: 'bash_20250124', name: 'bash' },
  ];
  const chat = messagesRequestToChat(req({ tools, tool_choice: { type: 'any', disable_parallel_tool_use: true } }));
  assert.deepEqual(chat.tools, [
    { type: 'function', function: { name: 'get_weather', description: 'Weather by city', parameters: tools[0].input_schema } },
    { type: 'function', function: { name: 'noop', parameters: { type: 'object' } } },
  ]);
  assert.equal(chat.tool_choice, 'required');
  assert.equal(chat.parallel_tool_calls, false);
  const choice = (tc: unknown): unknown => messagesRequestToChat(req({ tools, tool_choice: tc })).tool_choice;
  assert.equal(choice({ type: 'auto' }), 'auto');
  assert.equal(choice({ type: 'none' }), 'none');
  assert.deepEqual(choice({ type: 'tool', name: 'get_weather' }), { type: 'function', function: { name: 'get_weather' } });
  assert.equal(messagesRequestToChat(req({ tools, tool_choice: { type: 'auto' } })).parallel_tool_calls, undefined);
  // Only server tools: no tools and no tool_choice go upstream.
  const onlyServer = messagesRequestToChat(req({ tools: [tools[2]], tool_choice: { type: 'auto' } }));
  assert.equal(onlyServer.tools, undefined);
  assert.equal(onlyServer.tool_choice, undefined);
});

test('metadata.user_id becomes user as is up to 64 characters, else its SHA-256 in hex (stable, 64 characters)', () => {
  assert.equal(messagesRequestToChat(req({ metadata: { user_id: 'u'.repeat(64) } })).user, 'u'.repeat(64));
  const long = `user_${'a'.repeat(64)}_account__session_${'b'.repeat(36)}`;
  const user = messagesRequestToChat(req({ metadata: { user_id: long } })).user as string;
  assert.match(user, /^[0-9a-f]{64}$/);
  assert.equal(messagesRequestToChat(req({ metadata: { user_id: long } })).user, user);
});

test('streaming asks the upstream for usage', () => {
  const chat = messagesRequestToChat(req({ stream: true }));
  assert.equal(chat.stream, true);
  assert.deepEqual(chat.stream_options, { include_usage: true });
  const plain = messagesRequestToChat(req({ stream: false }));
  assert.equal(plain.stream, undefined);
  assert.equal(plain.stream_options, undefined);
});

test('thinking budgets map to reasoning effort by the inverse of the budget table; an explicit effort wins', () => {
  const table: [number, string][] = [[1024, 'low'], [1025, 'medium'], [2048, 'medium'], [4096, 'high'], [4097, 'xhigh'], [8192, 'xhigh'], [8193, 'max'], [32000, 'max']];
  for (const [budget, effort] of table) {
    assert.equal(budgetToEffort(budget), effort);
    assert.equal(messagesRequestToChat(req({ max_tokens: 64000, thinking: { type: 'enabled', budget_tokens: budget } })).reasoning_effort, effort);
  }
  assert.equal(messagesRequestToChat(req({ thinking: { type: 'adaptive' } })).reasoning_effort, 'medium');
  assert.equal(messagesRequestToChat(req({ thinking: { type: 'disabled' } })).reasoning_effort, undefined);
  assert.equal(messagesRequestToChat(req({})).reasoning_effort, undefined);
  assert.equal(
    messagesRequestToChat(req({ thinking: { type: 'enabled', budget_tokens: 1024 }, output_config: { effort: 'xhigh' } })).reasoning_effort,
    'xhigh',
  );
});

test('a JSON schema output format becomes a json_schema response_format', () => {
  const schema = { type: 'object', properties: { a: { type: 'number' } } };
  const chat = messagesRequestToChat(req({ output_config: { format: { type: 'json_schema', schema } } }));
  assert.deepEqual(chat.response_format, { type: 'json_schema', json_schema: { name: 'output', schema, strict: true } });
  assert.equal(chat.reasoning_effort, undefined);
});

const completion = {
  id: 'chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG',
  object: 'chat.completion',
  created: 1741570283,
  model: 'gpt-4o-2024-08-06',
  choices: [{
    index: 0,
    message: {
      role: 'assistant',
      content: 'Let me check both.',
      reasoning_content: 'Two tools needed.',
      tool_calls: [
        { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
        { id: 'call_2', type: 'function', function: { name: 'get_time', arguments: '{"tz":' } },
      ],
      refusal: null,
    },
    logprobs: null,
    finish_reason: 'tool_calls',
  }],
  usage: {
    prompt_tokens: 1117, completion_tokens: 46, total_tokens: 1163,
    prompt_tokens_details: { cached_tokens: 1024, audio_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: 12, audio_tokens: 0 },
  },
};

test('a chat completion becomes a Messages response with the alias', () => {
  assert.deepEqual(chatResponseToMessages(completion, 'fast'), {
    id: 'msg_chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG',
    type: 'message',
    role: 'assistant',
    model: 'fast',
    content: [
      { type: 'thinking', thinking: 'Two tools needed.', signature: '' },
      { type: 'text', text: 'Let me check both.' },
      { type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Paris' } },
      { type: 'tool_use', id: 'call_2', name: 'get_time', input: {} },
    ],
    stop_reason: 'tool_use',
    stop_sequence: null,
    usage: { input_tokens: 93, output_tokens: 46, cache_read_input_tokens: 1024, output_tokens_details: { thinking_tokens: 12 } },
  });
});

test('ids keep an existing msg_ prefix; empty answers have no content blocks; missing usage is zero', () => {
  const m = chatResponseToMessages({ id: 'msg_abc', choices: [{ index: 0, message: { role: 'assistant', content: '' }, finish_reason: 'stop' }] }, 'a');
  assert.equal(m.id, 'msg_abc');
  assert.deepEqual(m.content, []);
  assert.deepEqual(m.usage, { input_tokens: 0, output_tokens: 0 });
  const noId = chatResponseToMessages({ choices: [] }, 'a');
  assert.match(noId.id as string, /^msg_[0-9a-f]{32}$/);
  assert.equal(noId.stop_reason, 'end_turn');
  const refused = chatResponseToMessages({ id: 'x', choices: [{ message: { content: null, refusal: 'I cannot help with that.' }, finish_reason: 'content_filter' }] }, 'a');
  assert.deepEqual(refused.content, [{ type: 'text', text: 'I cannot help with that.' }]);
  assert.equal(refused.stop_reason, 'refusal');
});

test('finish reasons map to stop reasons', () => {
  const table: [unknown, string][] = [
    ['stop', 'end_turn'], ['length', 'max_tokens'], ['tool_calls', 'tool_use'], ['function_call', 'tool_use'],
    ['content_filter', 'refusal'], [null, 'end_turn'], [undefined, 'end_turn'], ['weird', 'end_turn'],
  ];
  for (const [finish, stop] of table) assert.equal(finishToStopReason(finish), stop, String(finish));
});

test('canonical usage → Messages usage takes cache reads and writes out of input_tokens', () => {
  assert.deepEqual(canonicalUsageToAnthropic(undefined), { input_tokens: 0, output_tokens: 0 });
  assert.deepEqual(canonicalUsageToAnthropic({ prompt_tokens: 9512, completion_tokens: 89, prompt_tokens_details: { cached_tokens: 8000, cache_creation_tokens: 1500 } }), {
    input_tokens: 12, output_tokens: 89, cache_read_input_tokens: 8000, cache_creation_input_tokens: 1500,
  });
  assert.deepEqual(canonicalUsageToAnthropic({ prompt_tokens: 5, completion_tokens: 1 }), { input_tokens: 5, output_tokens: 1 });
});

test('round trip: a Messages answer sent back as history reproduces the chat tool calls', () => {
  const answer = chatResponseToMessages(completion, 'fast');
  const next = messagesRequestToChat(req({
    messages: [
      { role: 'user', content: 'weather and time?' },
      { role: 'assistant', content: answer.content },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_1', content: 'sunny' }, { type: 'tool_result', tool_use_id: 'call_2', content: 'noon' }] },
    ],
  }));
  const msgs = next.messages as Record<string, unknown>[];
  const original = completion.choices[0].message;
  assert.deepEqual(msgs[1], {
    role: 'assistant',
    content: original.content,
    tool_calls: [original.tool_calls[0], { ...original.tool_calls[1], function: { name: 'get_time', arguments: '{}' } }],
  });
  assert.deepEqual(msgs.slice(2), [
    { role: 'tool', tool_call_id: 'call_1', content: 'sunny' },
    { role: 'tool', tool_call_id: 'call_2', content: 'noon' },
  ]);
});

test('the official SDK accepts the bridged response', async () => {
  const body = JSON.stringify(chatResponseToMessages(completion, 'fast'));
  const client = new Anthropic({
    apiKey: 'test',
    baseURL: 'http://gateway.invalid',
    maxRetries: 0,
    fetch: async () => new Response(body, { status: 200, headers: { 'content-type': 'application/json' } }),
  });
  const msg = await client.messages.create({ model: 'fast', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] });
  assert.equal(msg.model, 'fast');
  assert.equal(msg.stop_reason, 'tool_use');
  const tool = msg.content.find((b) => b.type === 'tool_use');
  assert.deepEqual(tool?.type === 'tool_use' ? tool.input : undefined, { city: 'Paris' });
  assert.equal(msg.usage.input_tokens, 93);
  assert.equal(msg.usage.cache_read_input_tokens, 1024);
});
