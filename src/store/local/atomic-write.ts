// Moved to src/fs (shared by both stores and the installer); kept so existing imports keep working.
export { writeFileAtomic, type AtomicWriteOptions } from '../../fs/atomic-write.ts';
