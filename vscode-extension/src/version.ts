/**
 * Server version checks (pure, unit-tested). The extension expects a server whose major.minor equals
 * `htam.expectedServerVersion` in package.json; the patch level may differ.
 */

/** A parsed `major.minor.patch` version. */
export interface Version {
  major: number;
  minor: number;
  patch: number;
}

/** Parse the output of `htam --version` (e.g. "htam 0.1.0\n"); undefined when no version is found. */
export function parseHtamVersion(output: string): Version | undefined {
  const m = /(?:^|\s|htam\s+)v?(\d+)\.(\d+)(?:\.(\d+))?/.exec(output.trim());
  if (!m) {
    return undefined;
  }
  return { major: Number(m[1]), minor: Number(m[2]), patch: m[3] === undefined ? 0 : Number(m[3]) };
}

/** Format as "major.minor.patch". */
export function formatVersion(v: Version): string {
  return `${v.major}.${v.minor}.${v.patch}`;
}

/**
 * Compare a server version with the expected "major.minor".
 * Returns undefined when compatible, else a user-facing sentence saying what to do.
 */
export function versionMismatch(found: Version, expectedMajorMinor: string): string | undefined {
  const exp = parseHtamVersion(expectedMajorMinor);
  if (!exp) {
    throw new Error(`invalid expected version "${expectedMajorMinor}"`);
  }
  if (found.major === exp.major && found.minor === exp.minor) {
    return undefined;
  }
  const direction =
    found.major < exp.major || (found.major === exp.major && found.minor < exp.minor)
      ? `Upgrade the server: pip install -U "htam==${exp.major}.${exp.minor}.*"`
      : "Update the HTAM extension, or install the matching server version";
  return `HTAM server version ${formatVersion(found)} does not match this extension, which expects ${exp.major}.${exp.minor}.x. ${direction}.`;
}
