-- Lmod modulefile for shardtune 0.1.0. SHARDTUNE_ROOT overrides the install prefix.
whatis("Name: shardtune")
whatis("Version: 0.1.0")
whatis("Description: FSDP-style fine-tuning of Llama-family models (SFT, DPO) on GPU clusters")
help([[shardtune: run `shardtune --help`; sbatch $SHARDTUNE_ROOT/share/shardtune/slurm/launch.slurm]])

local root = os.getenv("SHARDTUNE_ROOT") or "/opt/shardtune/0.1.0"
setenv("SHARDTUNE_ROOT", root)
prepend_path("PATH", pathJoin(root, "bin"))
