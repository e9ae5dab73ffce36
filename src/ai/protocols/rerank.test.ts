import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseRerankRequest, rerankUsage } from './rerank.ts';
import { refusedParam } from '../../../test/harness/refused-param.ts';

const parse = (body: unknown) => parseRerankRequest(Buffer.from(JSON.stringify(body)));

const refused = (body: unknown) => refusedParam(parseRerankRequest, body);

test('string and object documents, vendor fields kept', () => {
  const body = { model: 'm', query: 'q', documents: ['a', { text: 'b', title: 't' }], top_n: 1, return_documents: true, max_tokens_per_doc: 512, top_n_extra: null };
  assert.deepEqual(parse(body), body);
  assert.equal(parse({ model: 'm', query: 'q', documents: ['a'], top_n: null }).top_n, null);
});

test('refusals name their field', () => {
  assert.equal(refused({ query: 'q', documents: ['a'] }), 'model');
  for (const query of [undefined, '', 5, null, ['q']]) assert.equal(refused({ model: 'm', query, documents: ['a'] }), 'query');
  assert.deepEqual(parse({ model: 'm', query: { content: [{ type: 'image_url', image_url: { url: 'u' } }] }, documents: ['a'] }).query, { content: [{ type: 'image_url', image_url: { url: 'u' } }] });
  for (const documents of [undefined, [], 'a', { a: 1 }]) assert.equal(refused({ model: 'm', query: 'q', documents }), 'documents');
  assert.equal(refused({ model: 'm', query: 'q', documents: ['a', null] }), 'documents[1]');
  assert.equal(refused({ model: 'm', query: 'q', documents: [['a']] }), 'documents[0]');
  for (const top_n of [0, -1, 1.5, '3']) assert.equal(refused({ model: 'm', query: 'q', documents: ['a'], top_n }), 'top_n');
  assert.equal(refused({ model: 'm', query: 'q', documents: ['a'], stream: true }), 'stream');
});

test('input tokens: the first usage field the vendor reports, else zero', () => {
  assert.deepEqual(rerankUsage({ usage: { prompt_tokens: 3, total_tokens: 9 } }), { prompt_tokens: 3, total_tokens: 9 });
  assert.deepEqual(rerankUsage({ usage: { input_tokens: 4 } }), { prompt_tokens: 4, total_tokens: undefined });
  assert.deepEqual(rerankUsage({ usage: { total_tokens: 5 } }), { prompt_tokens: 5, total_tokens: 5 });
  assert.deepEqual(rerankUsage({ meta: { billed_units: { input_tokens: 6, search_units: 1 } } }), { prompt_tokens: 6, total_tokens: undefined });
  // Cohere bills search units: a zero-token row. A bad count is no count.
  assert.deepEqual(rerankUsage({ meta: { billed_units: { search_units: 1 } } }), { prompt_tokens: 0, total_tokens: undefined });
  assert.deepEqual(rerankUsage({ usage: { prompt_tokens: -1, total_tokens: 'x' } }), { prompt_tokens: 0, total_tokens: undefined });
});
