# `cmake --install`: bin/shardtune, share/shardtune/{slurm,examples,tools}, share/doc/shardtune and the
# relocatable modulefiles (Lmod .lua + Tcl twin) under share/modulefiles/shardtune/<version>.
set(st_modulefile ${CMAKE_SOURCE_DIR}/modulefiles/shardtune/${PROJECT_VERSION})
if(NOT EXISTS ${st_modulefile}.lua OR NOT EXISTS ${st_modulefile})
  message(FATAL_ERROR "modulefiles/shardtune/ must hold ${PROJECT_VERSION}.lua and ${PROJECT_VERSION} (Tcl): "
                      "rename them when the project version changes")
endif()
install(FILES ${st_modulefile}.lua ${st_modulefile}
        DESTINATION ${CMAKE_INSTALL_DATADIR}/modulefiles/shardtune)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/slurm/ DESTINATION ${CMAKE_INSTALL_DATADIR}/shardtune/slurm
        USE_SOURCE_PERMISSIONS)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/examples/ DESTINATION ${CMAKE_INSTALL_DATADIR}/shardtune/examples)
install(PROGRAMS ${CMAKE_SOURCE_DIR}/scripts/lm_eval_task.py DESTINATION ${CMAKE_INSTALL_DATADIR}/shardtune/tools)
install(FILES ${CMAKE_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
# docs/ beside the README, as in the repository, so the README's links hold where it is installed.
install(DIRECTORY ${CMAKE_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs)
