!> Built-in models by name, and the one routine every API entry point uses to
!> obtain its model: a built-in one (model_id > 0) or the Python callback (0).
!>
!> To add a built-in model: write fortran/models/<name>.f90 (a type extending
!> model_t that binds init(ipar, rpar, ierr), its constructor), give it the next
!> id in MODEL_NAMES below and a case in make_builtin; the Python twin in
!> pyint/models/<name>.py names it by the same string.
module pyint_registry
  use pyint_kinds
  use pyint_model, only: model_t
  use pyint_callback_model, only: callback_model_t, usercb_i, callback_model_start
  use pyint_compiled_model, only: compiled_model_t, compiled_model_new, COMPILED_MODEL_ID
  use model_anharmonic_chain, only: anharmonic_chain_t
  use model_pendulum_chain, only: pendulum_chain_t
  use model_snakeboard, only: snakeboard_t
  use model_snakeboard_coupled, only: snakeboard_coupled_t
  use model_chaplygin_sleigh, only: chaplygin_sleigh_t
  use model_skate, only: skate_t
  use model_driven_pendulum, only: driven_pendulum_t
  use model_natural_system, only: natural_system_t
  use model_two_link_angles, only: two_link_angles_t
  implicit none
  private
  public :: setup_model, builtin_info, model_lookup_id, MODEL_NAMES, NAME_LEN

  integer, parameter :: NAME_LEN = 32
  !> Index in this list = model id (0 is the Python callback).
  character(len=NAME_LEN), parameter :: MODEL_NAMES(*) = [character(len=NAME_LEN) :: &
       'pendulum_chain', &
       'snakeboard', &
       'snakeboard_coupled', &
       'chaplygin_sleigh', &
       'skate', &
       'driven_pendulum', &
       'anharmonic_chain', &
       'natural_system', &
       'two_link_angles']

contains

  integer function model_lookup_id(name) result(id)
    character(len=*), intent(in) :: name
    integer :: k
    id = -1
    do k = 1, size(MODEL_NAMES)
      if (trim(MODEL_NAMES(k)) == trim(name)) id = k
    end do
  end function

  !> Sizes and flags of built-in model model_id for these parameters (ierr = 1: unknown or bad).
  subroutine builtin_info(model_id, ipar, rpar, n, mh, mn, const_mass, has_energy, ierr)
    integer, intent(in) :: model_id
    integer, intent(in) :: ipar(:)
    real(wp), intent(in) :: rpar(:)
    integer, intent(out) :: n, mh, mn, const_mass, has_energy, ierr
    class(model_t), allocatable :: m
    n = 0; mh = 0; mn = 0; const_mass = 0; has_energy = 0
    ierr = 1
    if (model_id < 1 .or. model_id > size(MODEL_NAMES)) return
    call make_builtin(model_id, ipar, rpar, m, ierr)
    if (ierr /= 0) return
    n = m%n; mh = m%mh; mn = m%mn
    const_mass = merge(1, 0, m%const_mass)
    has_energy = merge(1, 0, m%has_energy)
  end subroutine

  subroutine make_builtin(model_id, ipar, rpar, m, ierr)
    integer, intent(in) :: model_id
    integer, intent(in) :: ipar(:)
    real(wp), intent(in) :: rpar(:)
    class(model_t), allocatable, intent(out) :: m
    integer, intent(out) :: ierr
    ierr = 1
    select case (trim(MODEL_NAMES(model_id)))
    case ('anharmonic_chain')
      allocate(anharmonic_chain_t :: m)
    case ('pendulum_chain')
      allocate(pendulum_chain_t :: m)
    case ('snakeboard')
      allocate(snakeboard_t :: m)
    case ('snakeboard_coupled')
      allocate(snakeboard_coupled_t :: m)
    case ('chaplygin_sleigh')
      allocate(chaplygin_sleigh_t :: m)
    case ('skate')
      allocate(skate_t :: m)
    case ('driven_pendulum')
      allocate(driven_pendulum_t :: m)
    case ('natural_system')
      allocate(natural_system_t :: m)
    case ('two_link_angles')
      allocate(two_link_angles_t :: m)
    case default
      return
    end select
    call m%init(ipar, rpar, ierr)
    if (ierr /= 0) deallocate(m)
  end subroutine

  !> The model of an API call.  model_id = 0: the Python callback with the
  !> sizes (n, mh, mn) and flags (const_mass, has_energy, per-item requests) given; model_id > 0:
  !> the built-in model, whose sizes must equal (n, mh, mn).
  !> ierr = 0 ok, 1 unknown model or bad parameters, 2 size mismatch.
  subroutine setup_model(model_id, ipar, rpar, usercb, n, mh, mn, mflags, m, ierr)
    integer, intent(in) :: model_id, n, mh, mn
    integer, intent(in) :: ipar(:), mflags(:)
    real(wp), intent(in) :: rpar(:)
    procedure(usercb_i) :: usercb
    class(model_t), allocatable, intent(out) :: m
    integer, intent(out) :: ierr
    if (model_id == 0) then
      block
        type(callback_model_t) :: c
        c%n = n
        c%mh = mh
        c%mn = mn
        c%const_mass = mflags(1) /= 0
        c%has_energy = mflags(2) /= 0
        c%cb => usercb
        allocate(m, source=c)
      end block
      ! its buffers are made on m, not on the block's c, whose finalization at the end of
      ! the block would free them; bundled requests unless mflags(3) /= 0
      if (size(mflags) < 3) then
        ierr = 1
        return
      end if
      select type (m)
      type is (callback_model_t)
        call callback_model_start(m, mflags(3) == 0)
      end select
      ierr = 0
      return
    end if
    if (model_id == COMPILED_MODEL_ID) then   ! a SymbolicModel's compiled library
      block
        type(compiled_model_t) :: c
        call compiled_model_new(ipar, rpar, mflags, c, ierr)
        if (ierr /= 0) return
        if (c%n /= n .or. c%mh /= mh .or. c%mn /= mn) then
          ierr = 2
          return
        end if
        allocate(m, source=c)
      end block
      return
    end if
    ierr = 1
    if (model_id < 0 .or. model_id > size(MODEL_NAMES)) return
    call make_builtin(model_id, ipar, rpar, m, ierr)
    if (ierr /= 0) return
    if (m%n /= n .or. m%mh /= mh .or. m%mn /= mn) ierr = 2
  end subroutine

end module pyint_registry
