import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compileUrlRewrites } from './url-rewrite.ts';

test('no rules: the identity, returning the very same string', () => {
  const rw = compileUrlRewrites([]);
  const target = `/v1/chat/completions?x=${'a'.repeat(3)}`;
  assert.equal(rw(target), target);
  assert.equal(compileUrlRewrites([]), rw, 'one shared function, nothing compiled');
});

test('a matching rule rewrites the path; a non-matching target is returned unchanged', () => {
  const rw = compileUrlRewrites([{ match: '^/openai/v1/', rewrite: '/v1/' }]);
  assert.equal(rw('/openai/v1/chat/completions'), '/v1/chat/completions');
  assert.equal(rw('/anthropic/v1/messages'), '/anthropic/v1/messages');
});

test('the first matching rule wins', () => {
  const rw = compileUrlRewrites([
    { name: 'specific', match: '^/api/v1/models$', rewrite: '/v1/models' },
    { name: 'general', match: '^/api/', rewrite: '/passthrough/api/' },
  ]);
  assert.equal(rw('/api/v1/models'), '/v1/models');
  assert.equal(rw('/api/files'), '/passthrough/api/files');
});

test('applied once: the result is not run through the rules again', () => {
  const rw = compileUrlRewrites([
    { match: '^/a(/.*)?$', rewrite: '/b$1' },
    { match: '^/b(/.*)?$', rewrite: '/c$1' },
  ]);
  assert.equal(rw('/a/x'), '/b/x');
  assert.equal(rw('/b/x'), '/c/x');
  // A rule whose output matches itself again is not looped either.
  assert.equal(compileUrlRewrites([{ match: '^/x', rewrite: '/x/x' }])('/x'), '/x/x');
});

test('the regex sees the path only; the caller query is kept and re-appended', () => {
  const rw = compileUrlRewrites([{ match: '^/old/(.*)$', rewrite: '/new/$1' }]);
  assert.equal(rw('/old/files?limit=3&after=f_1'), '/new/files?limit=3&after=f_1');
  // `$` anchors at the end of the path, not of the query.
  assert.equal(compileUrlRewrites([{ match: '/files$', rewrite: '/documents' }])('/v1/files?purpose=batch'), '/v1/documents?purpose=batch');
  // A rule matching only on the query never fires.
  assert.equal(compileUrlRewrites([{ match: 'limit', rewrite: '/x' }])('/v1/files?limit=3'), '/v1/files?limit=3');
  assert.equal(rw('/old/a?'), '/new/a?');
});

test('a rewrite that adds a query puts the caller query after it with &', () => {
  const rw = compileUrlRewrites([{ match: '^/v/(\\w+)$', rewrite: '/api?version=$1' }]);
  assert.equal(rw('/v/2'), '/api?version=2');
  assert.equal(rw('/v/2?x=1'), '/api?version=2&x=1');
  assert.equal(rw('/v/2?'), '/api?version=2');
});

test('numbered and named groups, $& and $$ as in String.replace', () => {
  const rw = compileUrlRewrites([
    { match: '^/p/(?<provider>[a-z]+)/(?<rest>.*)$', rewrite: '/passthrough/$<provider>/v1/$<rest>' },
    { match: '^/(\\d+)/(\\d+)$', rewrite: '/$2/$1' },
    { match: '^/dup$', rewrite: '$&$&' },
    { match: '^/cost$', rewrite: '/$$' },
  ]);
  assert.equal(rw('/p/openai/files/f_1'), '/passthrough/openai/v1/files/f_1');
  assert.equal(rw('/1/2'), '/2/1');
  assert.equal(rw('/dup'), '/dup/dup');
  assert.equal(rw('/cost'), '/$');
});

test('an unanchored match replaces only the matched part (first occurrence)', () => {
  const rw = compileUrlRewrites([{ match: '/beta/', rewrite: '/' }]);
  assert.equal(rw('/v1/beta/assistants/beta/x'), '/v1/assistants/beta/x');
});

test('a result without a leading / gets one; an empty result is /', () => {
  assert.equal(compileUrlRewrites([{ match: '^/legacy/', rewrite: '' }])('/legacy/v1/models?a=1'), '/v1/models?a=1');
  assert.equal(compileUrlRewrites([{ match: '^/.*$', rewrite: '' }])('/anything'), '/');
  assert.equal(compileUrlRewrites([{ match: '^/(.*)$', rewrite: 'v1/$1' }])('/models'), '/v1/models');
});

test('the path is raw: percent-encoding is neither decoded nor re-encoded', () => {
  const rw = compileUrlRewrites([{ match: '^/a%2Fb/', rewrite: '/c/' }]);
  assert.equal(rw('/a%2Fb/x%20y'), '/c/x%20y');
  assert.equal(rw('/a/b/x'), '/a/b/x');
});

test('absolute-form targets: only the path is rewritten, scheme and authority are kept', () => {
  const rw = compileUrlRewrites([{ match: '^/old/', rewrite: '/new/' }, { match: '^/$', rewrite: '/root' }]);
  assert.equal(rw('http://api.example.com/old/x?y=1'), 'http://api.example.com/new/x?y=1');
  assert.equal(rw('http://api.example.com:8080/other'), 'http://api.example.com:8080/other');
  // No path in the target: it is `/`.
  assert.equal(rw('http://api.example.com'), 'http://api.example.com/root');
  assert.equal(rw('http://api.example.com?q=1'), 'http://api.example.com/root?q=1');
  // Neither origin nor absolute form (OPTIONS *): untouched.
  assert.equal(rw('*'), '*');
});

test('rules hold no state between calls (no lastIndex carried over)', () => {
  const rw = compileUrlRewrites([{ match: '^/s/', rewrite: '/t/' }]);
  for (let i = 0; i < 3; i++) assert.equal(rw('/s/x'), '/t/x');
});
