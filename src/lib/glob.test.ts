import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compileGlob, globCapture, globMatches } from './glob.ts';

test('literal pattern matches only itself', () => {
  const g = compileGlob('fast');
  assert.equal(globMatches(g, 'fast'), true);
  assert.equal(globMatches(g, 'faster'), false);
  assert.equal(g.literalLength, 4);
});

test('prefix wildcard is anchored at both ends', () => {
  const g = compileGlob('openai/*');
  assert.equal(globCapture(g, 'openai/gpt-4o'), 'gpt-4o');
  assert.equal(globCapture(g, 'openai/'), '');
  assert.equal(globMatches(g, 'azure/openai/x'), false);
});

test('middle wildcard captures the middle and needs room for both literals', () => {
  const g = compileGlob('gpt-*-preview');
  assert.equal(globCapture(g, 'gpt-4o-preview'), '4o');
  assert.equal(globMatches(g, 'gpt-preview'), false);
  assert.equal(globMatches(g, 'gpt--preview'), true);
});

test('bare star matches everything', () => {
  assert.equal(globCapture(compileGlob('*'), 'anything/at all'), 'anything/at all');
});
