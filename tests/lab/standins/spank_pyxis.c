/* TEST ONLY: a stand-in for pyxis's spank_pyxis.so, which is not in Debian. It carries what the
 * slurm role reads from a real one - the plugin_version that slurm/spank.h's SPANK_PLUGIN macro
 * sets to SLURM_VERSION_NUMBER of the Slurm it was built for - and nothing else: Slurm never loads
 * it (molecule/_shared/slurm/bad_input.yml points slurm_pyxis_plugin at it in refused and
 * check-mode runs only). Build: gcc -shared -fPIC -nostdlib -DMAJOR=24 -DMINOR=11 -o x.so this.c
 */
const char plugin_name[] = "pyxis";
const char plugin_type[] = "spank";
const unsigned int plugin_version = ((MAJOR) << 16) | ((MINOR) << 8);
const unsigned int spank_plugin_version = 0;
