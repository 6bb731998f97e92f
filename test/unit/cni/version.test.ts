import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  LATEST_VERSION,
  SUPPORTED_VERSIONS,
  bestEffortVersion,
  compareVersions,
  isSupportedVersion,
  negotiate,
  versionInfo,
} from '../../../src/cni/version.ts';
import { cniError } from '../../support/cni-error.ts';

test('SUPPORTED_VERSIONS lists 0.3.0 to 1.1.0 in ascending order', () => {
  assert.deepEqual(SUPPORTED_VERSIONS, ['0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0']);
  assert.equal(LATEST_VERSION, '1.1.0');
});

test('isSupportedVersion() rejects 0.2.0 and non-strings', () => {
  assert.equal(isSupportedVersion('0.2.0'), false);
  assert.equal(isSupportedVersion(1), false);
  assert.equal(isSupportedVersion('1.0.0'), true);
});

test('compareVersions() compares numerically, not as text', () => {
  assert.equal(compareVersions('0.10.0', '0.4.0'), 1);
  assert.equal(compareVersions('1.0.0', '1.0.0'), 0);
  assert.equal(compareVersions('0.3.1', '0.4.0'), -1);
});

test('compareVersions() rejects a malformed version', () => {
  assert.throws(() => compareVersions('1.0', '1.0.0'), TypeError);
});

for (const version of SUPPORTED_VERSIONS) {
  test(`negotiate() accepts cniVersion ${version} for ADD`, () => {
    assert.equal(negotiate({ cniVersion: version }, 'ADD'), version);
  });
  test(`negotiate() accepts cniVersion ${version} for DEL`, () => {
    assert.equal(negotiate({ cniVersion: version }, 'DEL'), version);
  });
}

for (const version of ['0.1.0', '0.2.0', '1.2.0', '2.0.0']) {
  test(`negotiate() rejects unsupported cniVersion ${version} with code 1, naming it and the supported ones`, () => {
    assert.throws(
      () => negotiate({ cniVersion: version }, 'ADD'),
      cniError(
        1,
        new RegExp(
          `incompatible CNI version "${version.replace(/\./g, '\\.')}"; supported versions are 0\\.3\\.0, 0\\.3\\.1, 0\\.4\\.0, 1\\.0\\.0, 1\\.1\\.0$`,
        ),
      ),
    );
  });
}

test('negotiate() rejects a missing cniVersion with code 1', () => {
  assert.throws(() => negotiate({ name: 'n' }, 'ADD'), cniError(1, /cniVersion is missing/));
});

test('negotiate() treats an empty cniVersion as missing', () => {
  assert.throws(() => negotiate({ cniVersion: '' }, 'DEL'), cniError(1, /cniVersion is missing/));
});

test('negotiate() rejects a non-string cniVersion with code 6', () => {
  assert.throws(() => negotiate({ cniVersion: 1 }, 'ADD'), cniError(6, /^cniVersion must be a version string, got 1$/));
});

test('negotiate() rejects a malformed cniVersion with code 6, naming it', () => {
  assert.throws(
    () => negotiate({ cniVersion: '1.0' }, 'ADD'),
    cniError(6, /^cniVersion "1\.0" is not a version number/),
  );
});

test('negotiate() rejects a pre-release version as unsupported (code 1)', () => {
  assert.throws(() => negotiate({ cniVersion: '1.1.0-rc1' }, 'ADD'), cniError(1, /"1\.1\.0-rc1"/));
});

test('negotiate() picks the highest supported entry of cniVersions', () => {
  assert.equal(negotiate({ cniVersions: ['0.4.0', '1.1.0', '1.0.0'] }, 'ADD'), '1.1.0');
});

test('negotiate() skips cniVersions entries newer than it supports', () => {
  assert.equal(negotiate({ cniVersions: ['1.0.0', '1.2.0', '2.0.0'] }, 'ADD'), '1.0.0');
});

test('negotiate() prefers cniVersion over cniVersions (the runtime parses the answer as cniVersion)', () => {
  assert.equal(negotiate({ cniVersion: '1.0.0', cniVersions: ['1.0.0', '1.1.0'] }, 'ADD'), '1.0.0');
});

test('negotiate() uses cniVersions when cniVersion is empty', () => {
  assert.equal(negotiate({ cniVersion: '', cniVersions: ['0.4.0'] }, 'ADD'), '0.4.0');
});

test('negotiate() rejects cniVersions without a supported entry with code 1, listing them', () => {
  assert.throws(
    () => negotiate({ cniVersions: ['0.2.0', '2.0.0'] }, 'ADD'),
    cniError(1, /none of cniVersions "0\.2\.0", "2\.0\.0" is supported; supported versions are 0\.3\.0/),
  );
});

test('negotiate() treats an empty cniVersions as missing', () => {
  assert.throws(() => negotiate({ cniVersions: [] }, 'ADD'), cniError(1, /cniVersion is missing/));
});

test('negotiate() rejects a cniVersions that is not a list with code 6', () => {
  assert.throws(() => negotiate({ cniVersions: '1.0.0' }, 'ADD'), cniError(6, /cniVersions must be a list/));
});

test('negotiate() rejects a non-string cniVersions entry with code 6, naming its index', () => {
  assert.throws(
    () => negotiate({ cniVersions: ['1.0.0', 2] }, 'ADD'),
    cniError(6, /^cniVersions\[1\] must be a version string/),
  );
});

test('negotiate() rejects a malformed cniVersions entry with code 6', () => {
  assert.throws(
    () => negotiate({ cniVersions: ['x'] }, 'ADD'),
    cniError(6, /^cniVersions\[0\] "x" is not a version number/),
  );
});

for (const version of ['0.3.0', '0.3.1']) {
  test(`negotiate() refuses CHECK for ${version} with code 1`, () => {
    assert.throws(
      () => negotiate({ cniVersion: version }, 'CHECK'),
      cniError(
        1,
        new RegExp(
          `^CHECK needs cniVersion 0\\.4\\.0 or later, the configuration has ${version.replace(/\./g, '\\.')}$`,
        ),
      ),
    );
  });
}

for (const version of ['0.4.0', '1.0.0', '1.1.0']) {
  test(`negotiate() allows CHECK for ${version}`, () => {
    assert.equal(negotiate({ cniVersion: version }, 'CHECK'), version);
  });
}

for (const verb of ['GC', 'STATUS'] as const) {
  for (const version of ['0.3.1', '0.4.0', '1.0.0']) {
    test(`negotiate() refuses ${verb} for ${version} with code 1`, () => {
      assert.throws(
        () => negotiate({ cniVersion: version }, verb),
        cniError(1, new RegExp(`^${verb} needs cniVersion 1\\.1\\.0 or later`)),
      );
    });
  }
  test(`negotiate() allows ${verb} for 1.1.0`, () => {
    assert.equal(negotiate({ cniVersion: '1.1.0' }, verb), '1.1.0');
  });
  test(`negotiate() allows ${verb} when cniVersions includes 1.1.0`, () => {
    assert.equal(negotiate({ cniVersions: ['1.0.0', '1.1.0'] }, verb), '1.1.0');
  });
}

test('negotiate() never fails VERSION: unsupported falls back to the latest', () => {
  assert.equal(negotiate({ cniVersion: '9.9.9' }, 'VERSION'), '1.1.0');
});

test('negotiate() for VERSION echoes a supported cniVersion', () => {
  assert.equal(negotiate({ cniVersion: '0.4.0' }, 'VERSION'), '0.4.0');
});

test('negotiate() for VERSION with a malformed cniVersion falls back to the latest', () => {
  assert.equal(negotiate({ cniVersion: 7 }, 'VERSION'), '1.1.0');
});

test('bestEffortVersion() of undefined is the latest', () => {
  assert.equal(bestEffortVersion(undefined), '1.1.0');
});

test('bestEffortVersion() of a non-object is the latest', () => {
  assert.equal(bestEffortVersion([]), '1.1.0');
});

test('bestEffortVersion() returns a supported cniVersion', () => {
  assert.equal(bestEffortVersion({ cniVersion: '0.3.1' }), '0.3.1');
});

test('bestEffortVersion() honours cniVersions', () => {
  assert.equal(bestEffortVersion({ cniVersions: ['0.3.1', '1.0.0'] }), '1.0.0');
});

test('bestEffortVersion() of cniVersions without a supported entry is the latest', () => {
  assert.equal(bestEffortVersion({ cniVersions: ['9.0.0'] }), '1.1.0');
});

test('versionInfo() without a request reports 1.1.0 and every supported version', () => {
  assert.deepEqual(versionInfo(), {
    cniVersion: '1.1.0',
    supportedVersions: ['0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0'],
  });
});

test('versionInfo() echoes the requested supported cniVersion', () => {
  assert.equal(versionInfo({ cniVersion: '1.0.0' }).cniVersion, '1.0.0');
});

test('versionInfo() answers an unsupported request with the latest version', () => {
  assert.equal(versionInfo({ cniVersion: '0.2.0' }).cniVersion, '1.1.0');
});

test('versionInfo() prints as {"cniVersion", "supportedVersions"} in that order', () => {
  assert.equal(
    JSON.stringify(versionInfo({ cniVersion: '0.4.0' })),
    '{"cniVersion":"0.4.0","supportedVersions":["0.3.0","0.3.1","0.4.0","1.0.0","1.1.0"]}',
  );
});

test('versionInfo() returns a copy of the supported list', () => {
  const info = versionInfo();
  (info.supportedVersions as string[]).push('9.9.9');
  assert.equal(versionInfo().supportedVersions.length, 5);
});
