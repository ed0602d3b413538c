import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parseHtamVersion, versionMismatch } from "../../src/version";

describe("version", () => {
  it("parses htam --version output", () => {
    assert.deepEqual(parseHtamVersion("htam 0.1.0\n"), { major: 0, minor: 1, patch: 0 });
    assert.deepEqual(parseHtamVersion("1.12"), { major: 1, minor: 12, patch: 0 });
    assert.deepEqual(parseHtamVersion("htam 2.3.4.dev1"), { major: 2, minor: 3, patch: 4 });
    assert.equal(parseHtamVersion("usage: htam [-h]"), undefined);
  });

  it("accepts the same major.minor with any patch", () => {
    assert.equal(versionMismatch({ major: 0, minor: 1, patch: 7 }, "0.1"), undefined);
  });

  it("explains a mismatch in both directions", () => {
    assert.match(versionMismatch({ major: 0, minor: 0, patch: 9 }, "0.1") ?? "", /0\.0\.9.*expects 0\.1\.x.*Upgrade the server/);
    assert.match(versionMismatch({ major: 1, minor: 0, patch: 0 }, "0.1") ?? "", /Update the HTAM extension/);
    assert.throws(() => versionMismatch({ major: 0, minor: 1, patch: 0 }, "x"));
  });
});
