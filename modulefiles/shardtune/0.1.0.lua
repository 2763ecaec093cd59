-- Lmod modulefile for shardtune, installed as <prefix>/share/modulefiles/shardtune/<version>.lua.
-- Relocatable: the prefix is found from this file's path and the version from its name, so a
-- moved install or a copied file needs no edits. A site copying it into a central modulefile
-- tree sets SHARDTUNE_ROOT (the install prefix) before loading instead.
local version = myModuleVersion()
local root = os.getenv("SHARDTUNE_ROOT")
if not root or root == "" then
  root = (myFileName():gsub("/share/modulefiles/shardtune/[^/]+$", ""))
end

whatis("Name: shardtune")
whatis("Version: " .. version)
whatis("Description: FSDP-style fine-tuning (SFT, DPO) of Llama-family models on GPU clusters")
help([[
shardtune ]] .. version .. [[: fine-tuning of Llama-family models with FSDP-style sharding.
  shardtune --help                    the commands
  sbatch $SHARDTUNE_ROOT/share/shardtune/slurm/launch.slurm    a training job (see slurm/README.md)
  $SHARDTUNE_ROOT/share/shardtune/examples                     example configurations
]])

-- The MPI and CUDA modules the build used, where the site has them (names differ by site).
for _, name in ipairs({os.getenv("SHARDTUNE_MPI_MODULE") or "openmpi", os.getenv("SHARDTUNE_CUDA_MODULE") or "cuda"}) do
  if isAvail(name) then depends_on(name) end
end

setenv("SHARDTUNE_ROOT", root)
prepend_path("PATH", pathJoin(root, "bin"))
prepend_path("MANPATH", pathJoin(root, "share", "man"))
